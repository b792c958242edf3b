package groupcmd_test

import (
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/cli"
	"github.com/synapse-edge/synapse/cli/internal/clitest"
)

func TestE2EGroups(t *testing.T) {
	owner, member := clitest.P2PAgent(t, &synapseBin), clitest.P2PAgent(t, &synapseBin)
	memberID := clitest.Identity(t, member).AgentID
	clitest.Must(t, owner, "", "peer", "add", member.URL)
	clitest.Must(t, member, "", "peer", "add", owner.URL)

	type groupOut struct {
		GroupID  string `json:"group_id"`
		Standing string `json:"standing"`
		Members  []struct {
			AgentID string `json:"agent_id"`
		} `json:"members"`
	}
	g := clitest.Decode[groupOut](t, clitest.Must(t, owner, "", "group", "create", "line-3", "--member", memberID, "--json"))
	if g.GroupID == "" || g.Standing != "member" {
		t.Fatalf("group create = %+v", g)
	}
	clitest.Eventually(t, member, "the invitation", func(out string) bool {
		return clitest.Decode[groupOut](t, out).Standing == "invited"
	}, "group", "show", g.GroupID, "--json")
	clitest.Must(t, member, "", "group", "join", g.GroupID)
	clitest.Eventually(t, owner, "two members", func(out string) bool {
		return len(clitest.Decode[groupOut](t, out).Members) == 2
	}, "group", "show", g.GroupID, "--json")

	t.Run("list", func(t *testing.T) {
		out := clitest.Must(t, member, "", "group", "list")
		if !strings.HasPrefix(out, "GROUP ID") || !strings.Contains(out, g.GroupID) || !strings.Contains(out, "line-3") {
			t.Errorf("group list:\n%s", out)
		}
	})

	t.Run("a member may not disband", func(t *testing.T) {
		code, _, errOut := clitest.At(t, member, "", "group", "disband", g.GroupID)
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
		v := clitest.Decode[voteOut](t, clitest.Must(t, owner, "", "vote", "open", g.GroupID, "upgrade tonight?", "--option", "yes,no", "--json"))
		if v.Status != "open" {
			t.Fatalf("vote open = %+v", v)
		}
		clitest.Eventually(t, member, "the vote on the member", func(out string) bool {
			return clitest.Decode[voteOut](t, out).Status == "open"
		}, "vote", "show", g.GroupID, v.VoteID, "--json")
		clitest.Must(t, member, "", "vote", "cast", g.GroupID, v.VoteID, "yes")
		clitest.Must(t, owner, "", "vote", "cast", g.GroupID, v.VoteID, "yes")
		out := clitest.Eventually(t, member, "the result", func(out string) bool {
			return strings.Contains(out, "outcome:")
		}, "vote", "show", g.GroupID, v.VoteID)
		for key, want := range map[string]string{"winner": "yes", "outcome": "decided", "ballots": "2 of 2 voters"} {
			if got := clitest.KVValue(t, out, key); got != want {
				t.Errorf("vote show %s = %q, want %q", key, got, want)
			}
		}
		if list := clitest.Must(t, owner, "", "vote", "list", g.GroupID); !strings.Contains(list, v.VoteID) || !strings.Contains(list, "decided") {
			t.Errorf("vote list:\n%s", list)
		}
	})

	t.Run("send and messages", func(t *testing.T) {
		clitest.Must(t, member, "", "group", "send", g.GroupID, "maintenance at noon")
		clitest.Eventually(t, owner, "the message on the owner", func(out string) bool {
			return strings.Contains(out, "maintenance at noon")
		}, "group", "messages", g.GroupID)
	})

	t.Run("task", func(t *testing.T) {
		type taskOut struct {
			Status string `json:"status"`
			Result []any  `json:"result"`
		}
		got := clitest.Decode[taskOut](t, clitest.Must(t, owner, "", "group", "task", g.GroupID, "echo", "--payload", `{"n":7}`, "--wait", "20s", "--json"))
		if got.Status != "completed" || len(got.Result) != 2 {
			t.Errorf("group task = %+v, want completed with 2 echoes", got)
		}
	})
}
