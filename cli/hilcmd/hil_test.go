package hilcmd_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/cli"
	"github.com/synapse-edge/synapse/cli/internal/clitest"
	"github.com/synapse-edge/synapse/client"
	"github.com/synapse-edge/synapse/client/agenttest"
)

// confirmTask submits a confirm task and waits until it waits for a person.
func confirmTask(t *testing.T, a *agenttest.Agent, question string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c := client.New(a.URL, a.Token)
	payload, _ := json.Marshal(map[string]any{"question": question,
		"options": []map[string]any{{"field": "window", "value": "tonight", "pros_cons": "low traffic"}}})
	sub, _, err := c.SubmitTask(ctx, client.SubmitRequest{TaskType: "confirm", Payload: payload}, client.SubmitOptions{})
	if err != nil {
		t.Fatalf("submit confirm: %v", err)
	}
	for {
		ts, err := c.GetTask(ctx, sub.TaskID)
		if err != nil {
			t.Fatalf("get task %s: %v", sub.TaskID, err)
		}
		if ts.Status == "need_human" {
			return sub.TaskID
		}
		if ts.Terminal() {
			t.Fatalf("task %s is %s, want need_human", sub.TaskID, ts.Status)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("task %s still %s", sub.TaskID, ts.Status)
		case <-time.After(20 * time.Millisecond): // poll interval
		}
	}
}

func TestE2EHIL(t *testing.T) {
	a := clitest.Agent(t, &synapseBin)
	id := confirmTask(t, a, "Deploy build 42?")

	t.Run("list", func(t *testing.T) {
		// Listing looks at the waiting tasks first: no need to wait for
		// the agent's poll.
		out := clitest.Must(t, a, "", "hil", "list")
		if !strings.Contains(out, id) || !strings.HasPrefix(out, "TASK ID") || !strings.Contains(out, "1/3") || !strings.Contains(out, "hil:l1") ||
			!strings.Contains(out, "Deploy build 42?") {
			t.Errorf("hil list:\n%s", out)
		}
		list := clitest.Decode[client.HILList](t, clitest.Must(t, a, "", "hil", "list", "--json"))
		if len(list.Requests) != 1 || list.Requests[0].TaskID != id || list.Requests[0].State != "pending" {
			t.Errorf("hil list --json = %+v", list)
		}
	})
	t.Run("show", func(t *testing.T) {
		out := clitest.Must(t, a, "", "hil", "show", id)
		if got := clitest.KVValue(t, out, "level"); got != "1 of 3 (hil:l1)" {
			t.Errorf("level = %q", got)
		}
		if got := clitest.KVValue(t, out, "state"); got != "pending" {
			t.Errorf("state = %q", got)
		}
		if !strings.Contains(out, `window = "tonight"  (low traffic)`) || !strings.Contains(out, "created level 1") {
			t.Errorf("hil show lacks the option or the created step:\n%s", out)
		}
	})
	t.Run("wrong level", func(t *testing.T) {
		tc := clitest.Decode[client.TokenCreated](t, clitest.Must(t, a, "", "token", "create", "second-line", "--scope", "hil:l2", "--json"))
		code, _, errOut := clitest.Run(t, "", "--agent", a.URL, "--token", tc.Token, "hil", "approve", id)
		if code != cli.ExitFailure || !strings.Contains(errOut, "hil:l1") || !strings.Contains(errOut, "403") {
			t.Errorf("approve with hil:l2 at level 1: exit %d\n%s", code, errOut)
		}
	})
	t.Run("modify needs a field", func(t *testing.T) {
		code, _, errOut := clitest.At(t, a, "", "hil", "modify", id)
		if code != cli.ExitUsage || !strings.Contains(errOut, "--field") {
			t.Errorf("modify without --field: exit %d\n%s", code, errOut)
		}
	})
	t.Run("approve with fields", func(t *testing.T) {
		tc := clitest.Decode[client.TokenCreated](t, clitest.Must(t, a, "", "token", "create", "first-line", "--scope", "hil:l1", "--json"))
		code, out, errOut := clitest.Run(t, "", "--agent", a.URL, "--token", tc.Token, "hil", "approve", id,
			"--field", "window=now", "--field", "retries=3", "--notes", "checked")
		if code != cli.ExitOK || !strings.HasPrefix(out, "approved task "+id+" at level 1") {
			t.Fatalf("approve: exit %d\n%s%s", code, out, errOut)
		}
		ts := clitest.WaitTerminal(t, a, id)
		var res struct {
			ApprovedFields map[string]any `json:"approved_fields"`
			Notes          string         `json:"notes"`
		}
		if err := json.Unmarshal([]byte(ts.ResultJSON), &res); err != nil {
			t.Fatalf("result %q: %v", ts.ResultJSON, err)
		}
		if ts.Status != "completed" || res.ApprovedFields["window"] != "now" || res.ApprovedFields["retries"] != 3.0 || res.Notes != "checked" {
			t.Errorf("task %s result %+v", ts.Status, res)
		}
	})
	t.Run("decided twice", func(t *testing.T) {
		code, _, errOut := clitest.At(t, a, "", "hil", "reject", id)
		if code != cli.ExitFailure || !strings.Contains(errOut, "already decided") {
			t.Errorf("second decision: exit %d\n%s", code, errOut)
		}
	})
	t.Run("reject", func(t *testing.T) {
		id2 := confirmTask(t, a, "Reboot?")
		out := clitest.Must(t, a, "", "hil", "reject", id2, "--reason", "not now")
		if !strings.HasPrefix(out, "rejected task "+id2) {
			t.Errorf("reject: %s", out)
		}
		if ts := clitest.WaitTerminal(t, a, id2); ts.Status != "rejected" {
			t.Errorf("task %s after reject", ts.Status)
		}
		r := clitest.Decode[client.HILRequest](t, clitest.Must(t, a, "", "hil", "show", id2, "--json"))
		if r.Decision == nil || r.Decision.Action != "reject" || r.Decision.RejectionReason != "not now" {
			t.Errorf("decision = %+v", r.Decision)
		}
	})
	t.Run("list all", func(t *testing.T) {
		list := clitest.Decode[client.HILList](t, clitest.Must(t, a, "", "hil", "list", "--all", "--json"))
		if len(list.Requests) != 2 || list.Requests[0].State != "decided" || list.Requests[1].TaskID != id {
			t.Errorf("hil list --all = %+v", list.Requests)
		}
		if out := clitest.Must(t, a, "", "hil", "list"); strings.Contains(out, id) {
			t.Errorf("decided request listed as pending:\n%s", out)
		}
	})
}

func TestE2EHILEscalate(t *testing.T) {
	a := clitest.Agent(t, &synapseBin)
	id := confirmTask(t, a, "Shut the plant down?")
	out := clitest.Must(t, a, "", "hil", "escalate", id, "--notes", "needs the plant manager")
	if want := "handed task " + id + " to level 2 of 3 (hil:l2)"; !strings.HasPrefix(out, want) {
		t.Fatalf("hil escalate: %q, want %q", out, want)
	}
	if got := clitest.KVValue(t, clitest.Must(t, a, "", "hil", "show", id), "level"); got != "2 of 3 (hil:l2)" {
		t.Errorf("level after escalate = %q", got)
	}
	clitest.Must(t, a, "", "hil", "escalate", id)
	code, _, errOut := clitest.At(t, a, "", "hil", "escalate", id)
	if code != cli.ExitFailure || !strings.Contains(errOut, "409") {
		t.Errorf("escalate at the last level: exit %d\n%s", code, errOut)
	}
	// Decided, so that the agent's shutdown does not wait for the handler.
	clitest.Must(t, a, "", "hil", "reject", id)
	clitest.WaitTerminal(t, a, id)
}
