package wire_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/synapse-edge/synapse/wire"
)

// names lists the names of ifaces.
func names(ifaces []wire.ImplementedInterface) []string {
	out := make([]string, len(ifaces))
	for i, x := range ifaces {
		out[i] = x.Name
	}
	return out
}

// without returns the standard interfaces except the named ones.
func without(drop ...string) []wire.ImplementedInterface {
	var out []wire.ImplementedInterface
	for _, i := range wire.StandardInterfaces {
		if !slices.Contains(drop, i.Name) {
			out = append(out, i)
		}
	}
	return out
}

func TestStandardInterfaces(t *testing.T) {
	t.Run("seed 000 §6.1 order", func(t *testing.T) {
		want := []string{"AgentIdentity", "MessageHandler", "CapabilitiesProvider", "P2PTaskHandler",
			"CallbackReceiver", "CallbackSender", "TaskStatusProvider", "GroupTaskHandler", "GroupManager",
			"VotingHandler", "HILHandler", "EscalationHandler", "HTTPTransport", "MultipartTransport",
			"HybridTransport", "StreamingTransport", "Authenticator", "IdempotencyHandler"}
		if got := names(wire.StandardInterfaces); !slices.Equal(got, want) {
			t.Errorf("standard interfaces = %v, want %v", got, want)
		}
	})
	t.Run("8 basic, 5 complete, 5 advanced", func(t *testing.T) {
		got := map[wire.Compliance][]string{}
		for _, i := range wire.StandardInterfaces {
			got[i.ComplianceLevel] = append(got[i.ComplianceLevel], i.Name)
		}
		want := map[wire.Compliance][]string{
			wire.ComplianceBasic: {"AgentIdentity", "MessageHandler", "CapabilitiesProvider", "P2PTaskHandler",
				"CallbackReceiver", "HTTPTransport", "Authenticator", "IdempotencyHandler"},
			wire.ComplianceComplete: {"CallbackSender", "TaskStatusProvider", "HILHandler", "MultipartTransport", "HybridTransport"},
			wire.ComplianceAdvanced: {"GroupTaskHandler", "GroupManager", "VotingHandler", "EscalationHandler", "StreamingTransport"},
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("by level = %v, want %v", got, want)
		}
	})
	t.Run("categories of §6.3", func(t *testing.T) {
		got := map[wire.InterfaceCategory]int{}
		for _, i := range wire.StandardInterfaces {
			got[i.Category]++
			if i.Version != "1.0.0" || i.Description == "" {
				t.Errorf("%s: version %q, description %q", i.Name, i.Version, i.Description)
			}
		}
		want := map[wire.InterfaceCategory]int{wire.CategoryCore: 3, wire.CategoryP2P: 4, wire.CategoryGroup: 3,
			wire.CategoryHiL: 2, wire.CategoryTransport: 4, wire.CategorySecurity: 2}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("by category = %v, want %v", got, want)
		}
	})
	t.Run("lookup", func(t *testing.T) {
		i, ok := wire.StandardInterface(wire.IfaceHILHandler)
		if !ok || i.Category != wire.CategoryHiL || i.ComplianceLevel != wire.ComplianceComplete {
			t.Errorf("StandardInterface(HILHandler) = %+v, %v", i, ok)
		}
		if _, ok := wire.StandardInterface("ConfigProvider"); ok {
			t.Error("StandardInterface(ConfigProvider) found a management interface the protocol does not define")
		}
	})
}

func TestEvaluateCompliance(t *testing.T) {
	basics := []string{"AgentIdentity", "MessageHandler", "CapabilitiesProvider", "P2PTaskHandler",
		"CallbackReceiver", "HTTPTransport", "Authenticator", "IdempotencyHandler"}
	http := wire.StandardInterfaces[12]
	if http.Name != wire.IfaceHTTPTransport {
		t.Fatalf("StandardInterfaces[12] = %s", http.Name)
	}
	wrongLevel, v2, v11, noVersion := http, http, http, http
	wrongLevel.ComplianceLevel = wire.ComplianceAdvanced
	v2.Version, v11.Version, noVersion.Version = "2.0.0", "1.1.3", ""
	for _, c := range []struct {
		name  string
		impl  []wire.ImplementedInterface
		want  wire.ComplianceEvaluation
		basic []string
	}{
		{"all", wire.StandardInterfaces, wire.ComplianceEvaluation{BasicImplemented: 8, CompleteImplemented: 5, AdvancedImplemented: 5, Compliant: true}, nil},
		{"none", nil, wire.ComplianceEvaluation{}, basics},
		{"no groups", without(wire.IfaceGroupManager, wire.IfaceGroupTaskHandler, wire.IfaceVotingHandler),
			wire.ComplianceEvaluation{BasicImplemented: 8, CompleteImplemented: 5, AdvancedImplemented: 2, Compliant: true}, nil},
		{"two basics missing", without(wire.IfaceIdempotencyHandler, wire.IfaceHTTPTransport),
			wire.ComplianceEvaluation{BasicImplemented: 6, CompleteImplemented: 5, AdvancedImplemented: 5},
			[]string{"HTTPTransport", "IdempotencyHandler"}},
		{"unknown names and duplicates ignored",
			append(append(without(wire.IfaceHTTPTransport), wire.ImplementedInterface{Name: "ConfigProvider", Version: "1.0.0"}), wire.StandardInterfaces[0]),
			wire.ComplianceEvaluation{BasicImplemented: 7, CompleteImplemented: 5, AdvancedImplemented: 5}, []string{"HTTPTransport"}},
		{"a claimed level does not count", append(without(wire.IfaceHTTPTransport), wrongLevel),
			wire.ComplianceEvaluation{BasicImplemented: 8, CompleteImplemented: 5, AdvancedImplemented: 5, Compliant: true}, nil},
		{"another MAJOR is incompatible", append(without(wire.IfaceHTTPTransport), v2),
			wire.ComplianceEvaluation{BasicImplemented: 7, CompleteImplemented: 5, AdvancedImplemented: 5}, []string{"HTTPTransport"}},
		{"no version is incompatible", append(without(wire.IfaceHTTPTransport), noVersion),
			wire.ComplianceEvaluation{BasicImplemented: 7, CompleteImplemented: 5, AdvancedImplemented: 5}, []string{"HTTPTransport"}},
		{"another MINOR counts", append(without(wire.IfaceHTTPTransport), v11),
			wire.ComplianceEvaluation{BasicImplemented: 8, CompleteImplemented: 5, AdvancedImplemented: 5, Compliant: true}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := c.want
			want.AgentID, want.BasicRequired, want.CompleteTotal, want.AdvancedTotal = "a1", 8, 5, 5
			want.MissingBasics = c.basic
			if got := wire.EvaluateCompliance("a1", c.impl); !reflect.DeepEqual(got, want) {
				t.Errorf("EvaluateCompliance = %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestVersionBaseline(t *testing.T) {
	for _, c := range []struct {
		a, b, want string
		bad        bool
	}{
		{a: "1.0.0", b: "1.0.0", want: "1.0"},
		{a: "1.4.2", b: "1.2.9", want: "1.2"},
		{a: "1.2.0", b: "1.7.0", want: "1.2"},
		{a: "1.0.0", b: "1.0.7", want: "1.0"},
		{a: "1.3.0-rc.1", b: "1.5.0+build.7", want: "1.3"},
		{a: "1.0.0", b: "2.0.0", bad: true},
		{a: "3.1.0", b: "1.1.0", bad: true},
		{a: "1.0", b: "1.0.0", bad: true},
		{a: "1.0.0", b: "", bad: true},
		{a: "1.01.0", b: "1.0.0", bad: true},
	} {
		t.Run(c.a+" vs "+c.b, func(t *testing.T) {
			got, err := wire.VersionBaseline(c.a, c.b)
			switch {
			case c.bad && !errors.Is(err, wire.ErrVersionUnsupported):
				t.Errorf("VersionBaseline = %q, %v; want ErrVersionUnsupported", got, err)
			case !c.bad && (err != nil || got != c.want):
				t.Errorf("VersionBaseline = %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

// TestComplianceJSON checks the field names of seed 000 §1.3 and §5.4.
func TestComplianceJSON(t *testing.T) {
	t.Run("evaluation", func(t *testing.T) {
		b, err := json.Marshal(wire.EvaluateCompliance("a1", nil))
		if err != nil {
			t.Fatal(err)
		}
		want := `{"agent_id":"a1","basic_implemented":0,"basic_required":8,"complete_implemented":0,"complete_total":5,` +
			`"advanced_implemented":0,"advanced_total":5,"compliant":false,"missing_basics":["AgentIdentity","MessageHandler",` +
			`"CapabilitiesProvider","P2PTaskHandler","CallbackReceiver","HTTPTransport","Authenticator","IdempotencyHandler"]}`
		if got := string(b); got != want {
			t.Errorf("JSON = %s\nwant %s", got, want)
		}
		b, _ = json.Marshal(wire.EvaluateCompliance("a1", wire.StandardInterfaces))
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if _, ok := m["missing_basics"]; ok {
			t.Errorf("a compliant evaluation has missing_basics: %s", b)
		}
	})
	t.Run("implemented interface", func(t *testing.T) {
		b, err := json.Marshal(wire.StandardInterfaces[0])
		if err != nil {
			t.Fatal(err)
		}
		want := `{"name":"AgentIdentity","category":"core","compliance_level":"basic","version":"1.0.0","description":"agent id, name and public key"}`
		if got := string(b); got != want {
			t.Errorf("JSON = %s\nwant %s", got, want)
		}
	})
	t.Run("unknown fields accepted", func(t *testing.T) {
		var l wire.InterfaceList
		in := `{"agent_id":"x","protocol_version":"1.2.0","future":1,"interfaces":[{"name":"HTTPTransport","category":"transport","compliance_level":"basic","version":"1.1.0","since":"2031"}]}`
		if err := json.Unmarshal([]byte(in), &l); err != nil || len(l.Interfaces) != 1 || l.Interfaces[0].Version != "1.1.0" {
			t.Errorf("decode %s: %+v, %v", in, l, err)
		}
	})
}
