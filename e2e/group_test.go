package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/internal/testutil"
)

// groupView is a group as GET /group/{id} shows it.
type groupView struct {
	GroupID  string `json:"group_id"`
	Owner    string `json:"owner"`
	Status   string `json:"status"`
	Standing string `json:"standing"`
	Members  []struct {
		AgentID string  `json:"agent_id"`
		Role    string  `json:"role"`
		Weight  float64 `json:"weight"`
	} `json:"members"`
}

// voteView is a vote as GET /group/{id}/vote/{vote_id} shows it.
type voteView struct {
	VoteID string `json:"vote_id"`
	Status string `json:"status"`
	Result *struct {
		Outcome string `json:"outcome"`
		Winner  string `json:"winner"`
		Tally   struct {
			Cast    int                   `json:"cast"`
			Rounds  []struct{ Round int } `json:"rounds"`
			Ballots []struct {
				Voter string `json:"voter"`
			} `json:"ballots"`
		} `json:"tally"`
	} `json:"result"`
}

// getJSON reads path from a into v; false when the answer is not 200.
func getJSON(t *testing.T, a *agentProc, path string, v any) bool {
	t.Helper()
	r := a.call(http.MethodGet, path, nil)
	if r.status != http.StatusOK {
		return false
	}
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("GET %s: %v: %s", path, err, r.body)
	}
	return true
}

// mustPost posts body and fails unless the answer has status want.
func mustPost(t *testing.T, a *agentProc, path, body string, want int) response {
	t.Helper()
	r := a.call(http.MethodPost, path, []byte(body))
	if r.status != want {
		t.Fatalf("POST %s %s: %s, want %d", path, body, r, want)
	}
	return r
}

// TestGroups runs five agents as processes: the owner creates a group and
// invites four; each joins; votes of every consensus type reach their
// result on every member; a group task aggregates a majority despite a
// dissenting and a silent member; a member killed during a vote gets the
// result when it returns, and one down during a broadcast gets the
// message.
func TestGroups(t *testing.T) {
	dir := t.TempDir()
	config := func(name, script string) []string {
		path := filepath.Join(dir, name+".json")
		writeJSON(t, path, map[string]any{
			"p2p":      map[string]any{"max_retries": 3, "retry_base_delay_ms": 100, "heartbeat_interval_seconds": 1},
			"handlers": []map[string]any{{"task_type": "answer", "command": []string{"/bin/sh", "-c", "cat >/dev/null; " + script}}},
		})
		return []string{"--config", path}
	}
	agree := `printf '{"v":42}'`
	owner := startAgent(t, agentOpts{args: config("owner", agree)})
	scripts := []string{agree, agree, `printf '{"v":41}'`, "sleep 30"}
	var ms []*agentProc
	for i, s := range scripts {
		ms = append(ms, startAgent(t, agentOpts{args: config(fmt.Sprint("m", i+1), s)}))
	}
	all := append([]*agentProc{owner}, ms...)
	ids := make([]string, len(all))
	for i, a := range all {
		ids[i], _ = identityOf(t, a)
	}
	for _, m := range ms {
		for _, x := range [][2]*agentProc{{owner, m}, {m, owner}} {
			mustPost(t, x[0], prefix+"/agents", `{"endpoint":"`+x[1].url()+`"}`, http.StatusCreated)
		}
	}

	var g groupView
	if err := json.Unmarshal(mustPost(t, owner, prefix+"/group", `{"name":"five"}`, http.StatusCreated).body, &g); err != nil {
		t.Fatal(err)
	}
	gp := prefix + "/group/" + g.GroupID
	t.Run("invite four, each joins", func(t *testing.T) {
		for i, m := range ms {
			weight := 1
			if i == 0 {
				weight = 5 // for the weighted vote
			}
			mustPost(t, owner, gp+"/invite", fmt.Sprintf(`{"agent_id":%q,"weight":%d}`, ids[i+1], weight), http.StatusCreated)
			testutil.Eventually(t, 20*time.Second, "the invitation", func() bool {
				var v groupView
				return getJSON(t, m, gp, &v) && v.Standing == "invited"
			})
			mustPost(t, m, gp+"/join", ``, http.StatusAccepted)
		}
		want := slices.Clone(ids)
		slices.Sort(want)
		for _, a := range all {
			testutil.Eventually(t, 20*time.Second, "every member on every agent", func() bool {
				var v groupView
				if !getJSON(t, a, gp, &v) || v.Standing != "member" {
					return false
				}
				var got []string
				for _, m := range v.Members {
					got = append(got, m.AgentID)
				}
				slices.Sort(got)
				return slices.Equal(got, want)
			})
		}
	})

	t.Run("only the owner or an admin invites or disbands", func(t *testing.T) {
		for _, p := range []string{gp + "/invite", gp + "/disband"} {
			if r := ms[1].call(http.MethodPost, p, []byte(`{"agent_id":"`+ids[4]+`"}`)); r.status != http.StatusForbidden ||
				!strings.Contains(string(r.body), "permission_denied") {
				t.Errorf("POST %s by a member: %s, want 403 permission_denied", p, r)
			}
		}
	})

	// Ballots by agent: owner, m1 (weight 5), m2, m3, m4; "" abstains,
	// "x>y" ranks.
	votes := []struct {
		name       string
		consensus  string
		options    []string
		quorum     int
		ballots    []string
		outcome    string
		winner     string
		wantRounds int
	}{
		{"majority", "majority", []string{"yes", "no"}, 0, []string{"yes", "yes", "no", "yes", "no"}, "decided", "yes", 0},
		{"majority tie", "majority", []string{"a", "b", "c"}, 0, []string{"a", "b", "a", "b", "c"}, "tie", "", 0},
		{"supermajority", "supermajority", []string{"yes", "no"}, 0, []string{"yes", "yes", "yes", "yes", "no"}, "decided", "yes", 0},
		{"supermajority short", "supermajority", []string{"yes", "no"}, 0, []string{"yes", "yes", "yes", "no", "no"}, "no_consensus", "", 0},
		{"unanimous", "unanimous", []string{"yes", "no"}, 0, []string{"yes", "yes", "yes", "yes", "yes"}, "decided", "yes", 0},
		{"weighted against the heads", "weighted", []string{"yes", "no"}, 0, []string{"no", "yes", "no", "no", "no"}, "decided", "yes", 0},
		{"ranked in round 2", "ranked", []string{"a", "b", "c"}, 0, []string{"a>b", "a", "b>c>a", "c", "c>a"}, "decided", "c", 2},
	}
	for _, tc := range votes {
		t.Run("vote "+tc.name, func(t *testing.T) {
			opts, _ := json.Marshal(tc.options)
			var v voteView
			r := mustPost(t, owner, gp+"/vote", fmt.Sprintf(`{"title":%q,"options":%s,"consensus":%q,"quorum":%d,"deadline_seconds":60}`,
				tc.name, opts, tc.consensus, tc.quorum), http.StatusCreated)
			if err := json.Unmarshal(r.body, &v); err != nil {
				t.Fatal(err)
			}
			vp := gp + "/vote/" + v.VoteID
			for i, a := range all {
				testutil.Eventually(t, 20*time.Second, "the vote open", func() bool {
					var got voteView
					return getJSON(t, a, vp, &got) && got.Status == "open"
				})
				body := fmt.Sprintf(`{"option":%q}`, tc.ballots[i])
				if tc.consensus == "ranked" {
					rk, _ := json.Marshal(strings.Split(tc.ballots[i], ">"))
					body = fmt.Sprintf(`{"ranking":%s}`, rk)
				}
				want := http.StatusAccepted
				if a == owner {
					want = http.StatusOK
				}
				mustPost(t, a, vp+"/ballot", body, want)
			}
			for _, a := range all {
				testutil.Eventually(t, 20*time.Second, "the result on every agent", func() bool {
					var got voteView
					return getJSON(t, a, vp, &got) && got.Status == "closed"
				})
			}
			var got voteView
			getJSON(t, ms[3], vp, &got)
			res := got.Result
			if res.Outcome != tc.outcome || res.Winner != tc.winner || res.Tally.Cast != 5 || len(res.Tally.Ballots) != 5 {
				t.Errorf("result on a member = %s %q with %d ballots, want %s %q with 5", res.Outcome, res.Winner, res.Tally.Cast, tc.outcome, tc.winner)
			}
			if tc.wantRounds > 0 && len(res.Tally.Rounds) != tc.wantRounds {
				t.Errorf("%d rounds, want %d", len(res.Tally.Rounds), tc.wantRounds)
			}
			mustPost(t, ms[0], vp+"/ballot", `{"option":"`+tc.options[0]+`"}`, http.StatusConflict)
		})
	}

	t.Run("group task majority with a dissenter and a silent member", func(t *testing.T) {
		r := mustPost(t, owner, gp+"/task?wait=30", `{"task_type":"answer","aggregate":"majority","timeout_seconds":3}`, http.StatusOK)
		var gt struct {
			Status    string          `json:"status"`
			Result    json.RawMessage `json:"result"`
			Agreement int             `json:"agreement"`
			Parts     []struct {
				Member string `json:"member"`
				Status string `json:"status"`
			} `json:"parts"`
			Missing []struct {
				Member string `json:"member"`
				Reason string `json:"reason"`
			} `json:"missing"`
		}
		if err := json.Unmarshal(r.body, &gt); err != nil {
			t.Fatal(err)
		}
		if gt.Status != "completed" || string(gt.Result) != `{"v":42}` || gt.Agreement != 3 || len(gt.Parts) != 5 {
			t.Errorf("aggregate = %s %s by %d of %d parts, want completed {\"v\":42} by 3 of 5", gt.Status, gt.Result, gt.Agreement, len(gt.Parts))
		}
		if len(gt.Missing) != 1 || gt.Missing[0].Member != ids[4] || gt.Missing[0].Reason != "timed_out" {
			t.Errorf("missing = %+v, want %s timed_out", gt.Missing, ids[4])
		}
	})

	t.Run("a member down during a broadcast receives it on return", func(t *testing.T) {
		ms[2].kill()
		var sent struct {
			MessageID string `json:"message_id"`
		}
		if err := json.Unmarshal(mustPost(t, ms[0], gp+"/message", `{"text":"line stops at noon"}`, http.StatusCreated).body, &sent); err != nil {
			t.Fatal(err)
		}
		has := func(a *agentProc) bool {
			var evs struct {
				Events []struct {
					EventID string `json:"event_id"`
				} `json:"events"`
			}
			if !getJSON(t, a, gp+"/messages?after=0&limit=1000", &evs) {
				return false
			}
			return slices.ContainsFunc(evs.Events, func(e struct {
				EventID string `json:"event_id"`
			}) bool {
				return e.EventID == sent.MessageID
			})
		}
		testutil.Eventually(t, 20*time.Second, "the message on a member that stayed up", func() bool { return has(ms[1]) })
		ms[2].start()
		testutil.Eventually(t, 30*time.Second, "the message on the member that came back", func() bool { return has(ms[2]) })
	})

	t.Run("a member killed during a vote gets the result on return", func(t *testing.T) {
		var v voteView
		r := mustPost(t, owner, gp+"/vote", `{"title":"late","options":["x","y"],"quorum":5,"deadline_seconds":3}`, http.StatusCreated)
		if err := json.Unmarshal(r.body, &v); err != nil {
			t.Fatal(err)
		}
		vp := gp + "/vote/" + v.VoteID
		testutil.Eventually(t, 20*time.Second, "the vote on the member", func() bool {
			var got voteView
			return getJSON(t, ms[3], vp, &got) && got.Status == "open"
		})
		ms[3].kill()
		for i, a := range all[:4] {
			want := http.StatusAccepted
			if i == 0 {
				want = http.StatusOK
			}
			mustPost(t, a, vp+"/ballot", `{"option":"x"}`, want)
		}
		testutil.Eventually(t, 20*time.Second, "the vote closed at its deadline", func() bool {
			var got voteView
			return getJSON(t, owner, vp, &got) && got.Status == "closed" && got.Result.Outcome == "no_quorum"
		})
		ms[3].start()
		testutil.Eventually(t, 30*time.Second, "the result on the returning member", func() bool {
			var got voteView
			return getJSON(t, ms[3], vp, &got) && got.Status == "closed" && got.Result.Outcome == "no_quorum" && got.Result.Tally.Cast == 4
		})
	})
}
