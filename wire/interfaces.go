package wire

import (
	"fmt"
	"strconv"
	"strings"
)

// InterfaceCategory groups the standard interfaces (seed 000 §4.1).
type InterfaceCategory string

// The seven categories.
const (
	CategoryCore       InterfaceCategory = "core"
	CategoryP2P        InterfaceCategory = "p2p"
	CategoryGroup      InterfaceCategory = "group"
	CategoryHiL        InterfaceCategory = "hil"
	CategoryTransport  InterfaceCategory = "transport"
	CategorySecurity   InterfaceCategory = "security"
	CategoryManagement InterfaceCategory = "management"
)

// Compliance is how much an interface matters (seed 000 §5.1).
type Compliance string

// The three compliance levels.
const (
	ComplianceBasic    Compliance = "basic"    // must be implemented
	ComplianceComplete Compliance = "complete" // recommended
	ComplianceAdvanced Compliance = "advanced" // optional
)

// ImplementedInterface is one standard interface an agent implements (seed
// 000 §1.3).
type ImplementedInterface struct {
	Name            string            `json:"name" msgpack:"name"`
	Category        InterfaceCategory `json:"category" msgpack:"category"`
	ComplianceLevel Compliance        `json:"compliance_level" msgpack:"compliance_level"`
	Version         string            `json:"version" msgpack:"version"`
	Description     string            `json:"description,omitempty" msgpack:"description,omitempty"`
	Metadata        map[string]any    `json:"metadata,omitempty" msgpack:"metadata,omitempty"`
}

// ComplianceEvaluation is a registry's verdict on an agent (seed 000 §5.4).
type ComplianceEvaluation struct {
	AgentID             string   `json:"agent_id" msgpack:"agent_id"`
	BasicImplemented    int      `json:"basic_implemented" msgpack:"basic_implemented"`
	BasicRequired       int      `json:"basic_required" msgpack:"basic_required"`
	CompleteImplemented int      `json:"complete_implemented" msgpack:"complete_implemented"`
	CompleteTotal       int      `json:"complete_total" msgpack:"complete_total"`
	AdvancedImplemented int      `json:"advanced_implemented" msgpack:"advanced_implemented"`
	AdvancedTotal       int      `json:"advanced_total" msgpack:"advanced_total"`
	Compliant           bool     `json:"compliant" msgpack:"compliant"`
	MissingBasics       []string `json:"missing_basics,omitempty" msgpack:"missing_basics,omitempty"`
}

// The 18 standard interfaces (seed 000 §6.1). Seed §6.2's table says 7
// basic but lists 8, and its note says 8/5/5: 8 basic, 5 complete and 5
// advanced it is.
const (
	IfaceAgentIdentity        = "AgentIdentity"
	IfaceMessageHandler       = "MessageHandler"
	IfaceCapabilitiesProvider = "CapabilitiesProvider"
	IfaceP2PTaskHandler       = "P2PTaskHandler"
	IfaceCallbackReceiver     = "CallbackReceiver"
	IfaceCallbackSender       = "CallbackSender"
	IfaceTaskStatusProvider   = "TaskStatusProvider"
	IfaceGroupTaskHandler     = "GroupTaskHandler"
	IfaceGroupManager         = "GroupManager"
	IfaceVotingHandler        = "VotingHandler"
	IfaceHILHandler           = "HILHandler"
	IfaceEscalationHandler    = "EscalationHandler"
	IfaceHTTPTransport        = "HTTPTransport"
	IfaceMultipartTransport   = "MultipartTransport"
	IfaceHybridTransport      = "HybridTransport"
	IfaceStreamingTransport   = "StreamingTransport"
	IfaceAuthenticator        = "Authenticator"
	IfaceIdempotencyHandler   = "IdempotencyHandler"
)

// StandardInterfaces is the registry of seed 000 §6.1, in its order. It
// says what each interface is; which ones an agent implements is what its
// components register at run time (agent.Agent.ProvideInterface).
var StandardInterfaces = []ImplementedInterface{
	{IfaceAgentIdentity, CategoryCore, ComplianceBasic, "1.0.0", "agent id, name and public key", nil},
	{IfaceMessageHandler, CategoryCore, ComplianceBasic, "1.0.0", "receives UnifiedSynapseMessage envelopes", nil},
	{IfaceCapabilitiesProvider, CategoryCore, ComplianceBasic, "1.0.0", "declares AgentCapabilities", nil},
	{IfaceP2PTaskHandler, CategoryP2P, ComplianceBasic, "1.0.0", "runs tasks other agents request", nil},
	{IfaceCallbackReceiver, CategoryP2P, ComplianceBasic, "1.0.0", "receives task results from agents it asked", nil},
	{IfaceCallbackSender, CategoryP2P, ComplianceComplete, "1.0.0", "sends results to the requester's callback endpoint", nil},
	{IfaceTaskStatusProvider, CategoryP2P, ComplianceComplete, "1.0.0", "answers task status queries (polling)", nil},
	{IfaceGroupTaskHandler, CategoryGroup, ComplianceAdvanced, "1.0.0", "runs group sub-tasks and reports to the coordinator", nil},
	{IfaceGroupManager, CategoryGroup, ComplianceAdvanced, "1.0.0", "creates and disbands groups, manages members", nil},
	{IfaceVotingHandler, CategoryGroup, ComplianceAdvanced, "1.0.0", "opens votes, takes ballots, tallies", nil},
	{IfaceHILHandler, CategoryHiL, ComplianceComplete, "1.0.0", "puts decisions before people", nil},
	{IfaceEscalationHandler, CategoryHiL, ComplianceAdvanced, "1.0.0", "escalates undecided requests to levels 2 and 3", nil},
	{IfaceHTTPTransport, CategoryTransport, ComplianceBasic, "1.0.0", "HTTP request-response", nil},
	{IfaceMultipartTransport, CategoryTransport, ComplianceComplete, "1.0.0", "multipart/form-data uploads", nil},
	{IfaceHybridTransport, CategoryTransport, ComplianceComplete, "1.0.0", "callbacks with polling as a fallback", nil},
	{IfaceStreamingTransport, CategoryTransport, ComplianceAdvanced, "1.0.0", "SSE and WebSocket streams", nil},
	{IfaceAuthenticator, CategorySecurity, ComplianceBasic, "1.0.0", "signs and verifies messages, issues and checks tokens", nil},
	{IfaceIdempotencyHandler, CategorySecurity, ComplianceBasic, "1.0.0", "Idempotency-Key semantics", nil},
}

// StandardInterface looks an interface up by name.
func StandardInterface(name string) (ImplementedInterface, bool) {
	for _, i := range StandardInterfaces {
		if i.Name == name {
			return i, true
		}
	}
	return ImplementedInterface{}, false
}

// EvaluateCompliance judges a list of implemented interfaces against the
// standard registry (seed 000 §5.4): compliant when every basic one is
// there. Unknown names are ignored and an entry counts at the level the
// registry gives it, whatever level it claims. An entry whose version has
// another MAJOR than the registry's (or is not MAJOR.MINOR.PATCH) is
// incompatible (§6.5) and does not count.
func EvaluateCompliance(agentID string, impl []ImplementedInterface) ComplianceEvaluation {
	has := map[string]bool{}
	for _, i := range impl {
		if std, ok := StandardInterface(i.Name); ok {
			if _, err := VersionBaseline(std.Version, i.Version); err == nil {
				has[i.Name] = true
			}
		}
	}
	ev := ComplianceEvaluation{AgentID: agentID}
	for _, std := range StandardInterfaces {
		switch std.ComplianceLevel {
		case ComplianceBasic:
			ev.BasicRequired++
			if has[std.Name] {
				ev.BasicImplemented++
			} else {
				ev.MissingBasics = append(ev.MissingBasics, std.Name)
			}
		case ComplianceComplete:
			ev.CompleteTotal++
			if has[std.Name] {
				ev.CompleteImplemented++
			}
		case ComplianceAdvanced:
			ev.AdvancedTotal++
			if has[std.Name] {
				ev.AdvancedImplemented++
			}
		}
	}
	ev.Compliant = len(ev.MissingBasics) == 0
	return ev
}

// InterfaceList is the answer of GET /capabilities/interfaces: what
// CapabilitiesProvider.GetSupportedInterfaces returns, with the agent it
// is about.
type InterfaceList struct {
	AgentID         string                 `json:"agent_id" msgpack:"agent_id"`
	ProtocolVersion string                 `json:"protocol_version" msgpack:"protocol_version"`
	Interfaces      []ImplementedInterface `json:"interfaces" msgpack:"interfaces"`
}

// VersionBaseline applies the version rules of seed 000 §6.5 to two
// semantic versions MAJOR.MINOR.PATCH: different MAJORs are incompatible
// (an error wrapping ErrVersionUnsupported, TP-VER001); otherwise the lower
// MAJOR.MINOR is the baseline both sides use, returned as "MAJOR.MINOR".
// PATCH, pre-release and build suffixes are ignored.
func VersionBaseline(a, b string) (string, error) {
	am, an, err := majorMinor(a)
	if err != nil {
		return "", fmt.Errorf("%w: version %q: %v", ErrVersionUnsupported, a, err)
	}
	bm, bn, err := majorMinor(b)
	if err != nil {
		return "", fmt.Errorf("%w: version %q: %v", ErrVersionUnsupported, b, err)
	}
	if am != bm {
		return "", fmt.Errorf("%w: %s and %s differ in MAJOR", ErrVersionUnsupported, a, b)
	}
	return fmt.Sprintf("%d.%d", am, min(an, bn)), nil
}

// majorMinor reads MAJOR and MINOR of a version semverMajor accepts.
func majorMinor(v string) (int, int, error) {
	major, err := semverMajor(v)
	if err != nil {
		return 0, 0, err
	}
	core, _, _ := strings.Cut(strings.SplitN(v, "+", 2)[0], "-")
	minor, err := strconv.Atoi(strings.Split(core, ".")[1])
	return major, minor, err
}
