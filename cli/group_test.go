package cli_test

import (
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/cli"
	"github.com/synapse-edge/synapse/client/agenttest"
	"github.com/synapse-edge/synapse/internal/testutil"
)

// eventuallyCLI runs the command line until check accepts its output; each
// new output is logged, so a failure shows the last one.
func eventuallyCLI(t *testing.T, a *agenttest.Agent, what string, check func(out string) bool, args ...string) string {
	t.Helper()
	var last string
	testutil.Eventually(t, 20*time.Second, what+" from synapse "+strings.Join(args, " "), func() bool {
		code, out, _ := cliAt(t, a, "", args...)
		if code == cli.ExitOK && check(out) {
			last = out
			return true
		}
		if out != last {
			t.Logf("synapse %s (exit %d):\n%s", strings.Join(args, " "), code, out)
			last = out
		}
		return false
	})
	return last
}

func TestE2EGroups(t *testing.T) {
	owner, member := p2pAgent(t), p2pAgent(t)
	memberID := identity(t, member).AgentID
	mustCLI(t, owner, "", "peer", "add", member.URL)
	mustCLI(t, member, "", "peer", "add", owner.URL)

	type groupOut struct {
		GroupID  string `json:"group_id"`
		Standing string `json:"standing"`
		Members  []struct {
			AgentID string `json:"agent_id"`
		} `json:"members"`
	}
	g := decode[groupOut](t, mustCLI(t, owner, "", "group", "create", "line-3", "--member", memberID, "--json"))
	if g.GroupID == "" || g.Standing != "member" {
		t.Fatalf("group create = %+v", g)
	}
	eventuallyCLI(t, member, "the invitation", func(out string) bool {
		return decode[groupOut](t, out).Standing == "invited"
	}, "group", "show", g.GroupID, "--json")
	mustCLI(t, member, "", "group", "join", g.GroupID)
	eventuallyCLI(t, owner, "two members", func(out string) bool {
		return len(decode[groupOut](t, out).Members) == 2
	}, "group", "show", g.GroupID, "--json")

	t.Run("list", func(t *testing.T) {
		out := mustCLI(t, member, "", "group", "list")
		if !strings.HasPrefix(out, "GROUP ID") || !strings.Contains(out, g.GroupID) || !strings.Contains(out, "line-3") {
			t.Errorf("group list:\n%s", out)
		}
	})

	t.Run("a member may not disband", func(t *testing.T) {
		code, _, errOut := cliAt(t, member, "", "group", "disband", g.GroupID)
		if code != cli.ExitFailure || !strings.Contains(errOut, "permission_denied (403)") {
			t.Errorf("member disband: exit %d\n%s", code, errOut)
		}
	})

	t.Run("vote", func(t *testing.T) {
		type voteOut struct {
			VoteID string `json:"vote_id"`
			Status string `json:"status"`
			Result *struct {
				Outcome string `json:"outcome"`
				Winner  string `json:"winner"`
			} `json:"result"`
		}
		v := decode[voteOut](t, mustCLI(t, owner, "", "vote", "open", g.GroupID, "upgrade tonight?", "--option", "yes,no", "--json"))
		if v.Status != "open" {
			t.Fatalf("vote open = %+v", v)
		}
		eventuallyCLI(t, member, "the vote on the member", func(out string) bool {
			return decode[voteOut](t, out).Status == "open"
		}, "vote", "show", g.GroupID, v.VoteID, "--json")
		mustCLI(t, member, "", "vote", "cast", g.GroupID, v.VoteID, "yes")
		mustCLI(t, owner, "", "vote", "cast", g.GroupID, v.VoteID, "yes")
		out := eventuallyCLI(t, member, "the result", func(out string) bool {
			return strings.Contains(out, "outcome:")
		}, "vote", "show", g.GroupID, v.VoteID)
		for key, want := range map[string]string{"winner": "yes", "outcome": "decided", "ballots": "2 of 2 voters"} {
			if got := kvValue(t, out, key); got != want {
				t.Errorf("vote show %s = %q, want %q", key, got, want)
			}
		}
		if list := mustCLI(t, owner, "", "vote", "list", g.GroupID); !strings.Contains(list, v.VoteID) || !strings.Contains(list, "decided") {
			t.Errorf("vote list:\n%s", list)
		}
	})

	t.Run("send and messages", func(t *testing.T) {
		mustCLI(t, member, "", "group", "send", g.GroupID, "maintenance at noon")
		eventuallyCLI(t, owner, "the message on the owner", func(out string) bool {
			return strings.Contains(out, "maintenance at noon")
		}, "group", "messages", g.GroupID)
	})

	t.Run("task", func(t *testing.T) {
		type taskOut struct {
			Status string `json:"status"`
			Result []any  `json:"result"`
		}
		got := decode[taskOut](t, mustCLI(t, owner, "", "group", "task", g.GroupID, "echo", "--payload", `{"n":7}`, "--wait", "20s", "--json"))
		if got.Status != "completed" || len(got.Result) != 2 {
			t.Errorf("group task = %+v, want completed with 2 echoes", got)
		}
	})
}
