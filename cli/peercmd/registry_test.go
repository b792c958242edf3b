package peercmd_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/cli"
	"github.com/synapse-edge/synapse/cli/internal/clitest"
	"github.com/synapse-edge/synapse/client"
	"github.com/synapse-edge/synapse/client/agenttest"
)

func TestCapabilitiesUsage(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"agent id without compliance", []string{"capabilities", "--agent-id", "x"}, "--agent-id goes with --compliance"},
		{"find without a filter", []string{"registry", "find"}, "give --capability, --task-type or --status"},
		{"remove without an id", []string{"registry", "remove"}, "missing argument"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, errOut := clitest.Run(t, "", append([]string{"--agent", clitest.ClosedAgent(t)}, c.args...)...)
			if code != cli.ExitUsage || !strings.Contains(errOut, c.want) {
				t.Errorf("exit %d, want %d with %q:\n%s", code, cli.ExitUsage, c.want, errOut)
			}
		})
	}
	t.Run("help", func(t *testing.T) {
		for _, v := range [][]string{{"capabilities"}, {"registry", "list"}, {"registry", "find"}, {"registry", "remove"}} {
			code, out, _ := clitest.Run(t, "", append(v, "--help")...)
			if code != cli.ExitOK || !strings.HasPrefix(out, "Usage: synapse "+strings.Join(v, " ")) {
				t.Errorf("%v --help: exit %d\n%s", v, code, out)
			}
		}
	})
}

// TestE2ECapabilitiesAndRegistry runs a registry R and an agent B that
// registers with it, and reads both through the command line.
func TestE2ECapabilitiesAndRegistry(t *testing.T) {
	r := clitest.Agent(t, &synapseBin)
	cfg := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(cfg, []byte(`{"registry":{"url":"`+r.URL+`","token_env":"REGISTRY_TOKEN"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	b := agenttest.Start(t, synapseBin.Path(t), agenttest.Options{Args: []string{"--config", cfg}, Env: []string{"REGISTRY_TOKEN=" + r.Token}})
	idB := clitest.Identity(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// What B declares depends on the components this binary runs (groups
	// or not): the command line must show exactly that.
	declared, err := client.New(b.URL, "").Interfaces(ctx)
	if err != nil {
		t.Fatal(err)
	}
	has := func(name string) bool {
		return slices.ContainsFunc(declared.Interfaces, func(i client.Interface) bool { return i.Name == name })
	}
	advanced := 0
	for _, i := range declared.Interfaces {
		if i.ComplianceLevel == "advanced" {
			advanced++
		}
	}
	yes := map[bool]string{true: "yes", false: "no"}

	t.Run("capabilities", func(t *testing.T) {
		out := clitest.Must(t, b, "", "capabilities")
		for key, want := range map[string]string{"agent_id": idB.AgentID, "protocol_version": "1.0.0",
			"human in the loop": "yes", "groups": yes[has("GroupManager")], "max concurrent tasks": "10"} {
			if got := clitest.KVValue(t, out, key); got != want {
				t.Errorf("%s = %q, want %q", key, got, want)
			}
		}
		if !strings.Contains(out, "TASK TYPE") || !strings.Contains(out, "sleep ") || !strings.Contains(out, "diagnostics") {
			t.Errorf("no task type table:\n%s", out)
		}
		caps := clitest.Decode[client.Capabilities](t, clitest.Must(t, b, "", "capabilities", "--json"))
		if caps.AgentID != idB.AgentID || !caps.SupportStreaming || len(caps.SupportedTransportModes) != 4 {
			t.Errorf("capabilities --json = %+v", caps)
		}
	})
	t.Run("interfaces", func(t *testing.T) {
		out := clitest.Must(t, b, "", "capabilities", "--interfaces")
		if !strings.HasPrefix(out, "INTERFACE") || !has("HILHandler") || !strings.Contains(out, "HILHandler") ||
			strings.Count(out, "\n") != len(declared.Interfaces)+1 {
			t.Errorf("capabilities --interfaces:\n%s", out)
		}
		l := clitest.Decode[client.InterfaceList](t, clitest.Must(t, b, "", "capabilities", "--interfaces", "--json"))
		if l.AgentID != idB.AgentID || !slices.Equal(l.Interfaces, declared.Interfaces) {
			t.Errorf("%d interfaces of %s: %+v", len(l.Interfaces), l.AgentID, l.Interfaces)
		}
	})
	t.Run("compliance", func(t *testing.T) {
		out := clitest.Must(t, b, "", "capabilities", "--compliance")
		if clitest.KVValue(t, out, "compliant") != "yes" || clitest.KVValue(t, out, "basic") != "8/8" || clitest.KVValue(t, out, "complete") != "5/5" ||
			clitest.KVValue(t, out, "advanced") != fmt.Sprintf("%d/5", advanced) {
			t.Errorf("capabilities --compliance:\n%s", out)
		}
		clitest.Must(t, r, "", "peer", "add", b.URL)
		ev := clitest.Decode[client.Compliance](t, clitest.Must(t, r, "", "capabilities", "--agent-id", idB.AgentID, "--compliance", "--json"))
		if ev.AgentID != idB.AgentID || !ev.Compliant || ev.CompleteImplemented != 5 {
			t.Errorf("compliance of the peer = %+v", ev)
		}
	})
	t.Run("registry", func(t *testing.T) {
		var list []client.DirectoryEntry
		deadline := time.Now().Add(15 * time.Second)
		for len(list) == 0 {
			list = clitest.Decode[map[string][]client.DirectoryEntry](t, clitest.Must(t, r, "", "registry", "find", "--task-type", "echo", "--json"))["agents"]
			if time.Now().After(deadline) {
				t.Fatal("B did not register within 15 s")
			}
			time.Sleep(20 * time.Millisecond) // poll interval
		}
		if len(list) != 1 || list[0].AgentID != idB.AgentID || list[0].Status != "online" || list[0].Endpoint != b.URL {
			t.Errorf("registry find = %+v", list)
		}
		out := clitest.Must(t, r, "", "registry", "list")
		if !strings.HasPrefix(out, "AGENT ID") || !strings.Contains(out, idB.AgentID) || !strings.Contains(out, "online") {
			t.Errorf("registry list:\n%s", out)
		}
		if out := clitest.Must(t, r, "", "registry", "find", "--capability", "imaging"); strings.Contains(out, idB.AgentID) {
			t.Errorf("registry find --capability imaging lists B:\n%s", out)
		}
		clitest.Must(t, r, "", "registry", "remove", idB.AgentID)
		code, _, errOut := clitest.At(t, r, "", "registry", "remove", idB.AgentID)
		if code != cli.ExitFailure || !strings.Contains(errOut, "not_found") {
			t.Errorf("second remove: exit %d\n%s", code, errOut)
		}
	})
}
