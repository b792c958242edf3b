package group_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/group"
	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/wire"
)

// answer is a handler of task type "answer" that returns {"v": v}, or with
// v < 0 waits until it is cancelled.
func answer(v int) agent.Handler {
	return agent.Handler{Type: wire.SupportedTaskType{Type: "answer"}, Func: func(ctx context.Context, r *agent.Run) (any, error) {
		if v < 0 {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return map[string]int{"v": v}, nil
	}}
}

// sum is a handler of task type "sum" that adds payload.items.
var sum = agent.Handler{Type: wire.SupportedTaskType{Type: "sum"}, Func: func(_ context.Context, r *agent.Run) (any, error) {
	var p struct{ Items []int }
	if err := r.Decode(&p); err != nil {
		return nil, err
	}
	total := 0
	for _, n := range p.Items {
		total += n
	}
	return total, nil
}}

// groupTask polls n's copy of a group task until final.
func finalTask(t *testing.T, n *node, groupID, taskID string) *group.Task {
	t.Helper()
	var got *group.Task
	testutil.Eventually(t, pollTimeout, n.name+"'s copy of the finished group task", func() bool {
		var err error
		got, err = n.gm.Task(groupID, taskID)
		return err == nil && got.Status != group.TaskRunning && got.Status != group.TaskRequested
	})
	return got
}

func partStatuses(t *group.Task) []string {
	var out []string
	for _, p := range t.Parts {
		out = append(out, p.Status)
	}
	return out
}

func TestGroupTaskMajority(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	owner := startNode(t, "owner", clock, answer(42))
	var ms []*node
	for i, v := range []int{42, 42, 41, -1} { // one differs, one never answers
		m := startNode(t, "member"+string(rune('1'+i)), clock, answer(v))
		pair(t, owner, m)
		ms = append(ms, m)
	}
	g := formGroup(t, owner, ms)

	gt, started, err := owner.gm.RunTask(ctx, g.GroupID, group.TaskRequest{TaskType: "answer", Aggregate: group.AggregateMajority, TimeoutSeconds: 30})
	if err != nil || !started || len(gt.Parts) != 5 {
		t.Fatalf("RunTask: %+v started %v, %v; want 5 parts", gt, started, err)
	}
	testutil.Eventually(t, pollTimeout, "four parts answered", func() bool {
		cur, err := owner.gm.Task(g.GroupID, gt.TaskID)
		if err != nil {
			return false
		}
		done := 0
		for _, p := range cur.Parts {
			if p.Status == group.PartCompleted {
				done++
			}
		}
		return done == 4
	})
	clock.Advance(31 * time.Second)
	got := finalTask(t, owner, g.GroupID, gt.TaskID)
	if got.Status != group.TaskCompleted || canon(got.Result) != `{"v":42}` || got.Agreement != 3 {
		t.Errorf("aggregate = %s %s agreement %d, want completed {\"v\":42} by 3", got.Status, got.Result, got.Agreement)
	}
	slow := ms[3].id()
	if len(got.Missing) != 1 || got.Missing[0].Member != slow || got.Missing[0].Reason != group.PartTimedOut {
		t.Errorf("missing = %+v, want the slow member timed out", got.Missing)
	}
	var dissent []string
	for _, p := range got.Parts {
		if p.Status == group.PartCompleted && canon(p.Result) != `{"v":42}` {
			dissent = append(dissent, p.Member)
		}
	}
	if !slices.Equal(dissent, []string{ms[2].id()}) {
		t.Errorf("parts with another answer = %v, want %s", dissent, ms[2].id())
	}
	t.Run("the slow member's task is cancelled", func(t *testing.T) {
		var sub string
		for _, p := range got.Parts {
			if p.Member == slow {
				sub = p.TaskID
			}
		}
		testutil.Eventually(t, pollTimeout, "the slow part cancelled on the member", func() bool {
			tk, err := ms[3].a.Task(sub)
			return err == nil && tk.Status == wire.StatusCancelled
		})
	})
	t.Run("every member receives the result", func(t *testing.T) {
		for _, m := range ms {
			mine := finalTask(t, m, g.GroupID, gt.TaskID)
			if mine.Status != group.TaskCompleted || mine.Agreement != 3 {
				t.Errorf("%s's copy = %s agreement %d", m.name, mine.Status, mine.Agreement)
			}
		}
	})
}

func canon(v wire.JSONValue) string {
	var x any
	if json.Unmarshal(v, &x) != nil {
		return string(v)
	}
	b, _ := json.Marshal(x)
	return string(b)
}

func TestGroupTaskSplitFirstAndForwarded(t *testing.T) {
	ctx := context.Background()
	owner := startNode(t, "owner", nil, sum, answer(-1))
	m1 := startNode(t, "member1", nil, sum, answer(1))
	m2 := startNode(t, "member2", nil, sum)
	pair(t, owner, m1)
	pair(t, owner, m2)
	g := formGroup(t, owner, []*node{m1, m2})

	t.Run("split", func(t *testing.T) {
		gt, _, err := owner.gm.RunTask(ctx, g.GroupID, group.TaskRequest{TaskType: "sum", Mode: group.ModeSplit, SplitField: "items",
			Payload: wire.JSONValue(`{"items":[1,2,3,4,5]}`)})
		if err != nil {
			t.Fatal(err)
		}
		got := finalTask(t, owner, g.GroupID, gt.TaskID)
		if got.Status != group.TaskCompleted || canon(got.Result) != `[1,5,9]` {
			t.Errorf("split aggregate = %s %s, want completed [1,5,9] (parts [1] [2,3] [4,5])", got.Status, got.Result)
		}
	})

	t.Run("first", func(t *testing.T) {
		// Only the owner and m1 run "answer": m1 answers, the owner's own
		// part waits and is cancelled.
		gt, _, err := owner.gm.RunTask(ctx, g.GroupID, group.TaskRequest{TaskType: "answer", Aggregate: group.AggregateFirst})
		if err != nil {
			t.Fatal(err)
		}
		if len(gt.Parts) != 2 {
			t.Fatalf("parts = %+v, want the two members that run answer", gt.Parts)
		}
		got := finalTask(t, owner, g.GroupID, gt.TaskID)
		if got.Status != group.TaskCompleted || canon(got.Result) != `{"v":1}` || len(got.Missing) != 0 {
			t.Errorf("first = %s %s missing %v, want completed {\"v\":1}", got.Status, got.Result, got.Missing)
		}
		if want := []string{group.PartCancelled, group.PartCompleted}; !slices.Equal(partStatuses(got), want) {
			t.Errorf("parts = %v, want %v", partStatuses(got), want)
		}
		testutil.Eventually(t, pollTimeout, "the owner's waiting part cancelled", func() bool {
			tk, err := owner.a.Task(got.Parts[0].TaskID)
			return err == nil && tk.Status == wire.StatusCancelled
		})
	})

	t.Run("asked by a member", func(t *testing.T) {
		gt, started, err := m2.gm.RunTask(ctx, g.GroupID, group.TaskRequest{TaskType: "sum", Payload: wire.JSONValue(`{"items":[2,3]}`)})
		if err != nil || started || gt.Status != group.TaskRequested {
			t.Fatalf("RunTask from a member: %+v started %v, %v; want requested", gt, started, err)
		}
		got := finalTask(t, m2, g.GroupID, gt.TaskID)
		if got.Status != group.TaskCompleted || canon(got.Result) != `[5,5,5]` || got.Requester != m2.id() {
			t.Errorf("member's copy = %s %s by %s, want completed [5,5,5] asked by %s", got.Status, got.Result, got.Requester, m2.id())
		}
	})

	t.Run("members named, one of which fails", func(t *testing.T) {
		gt, _, err := owner.gm.RunTask(ctx, g.GroupID, group.TaskRequest{TaskType: "sum", Members: []string{m1.id(), m2.id()},
			Payload: wire.JSONValue(`{"items":"not a list"}`)})
		if err != nil {
			t.Fatal(err)
		}
		got := finalTask(t, owner, g.GroupID, gt.TaskID)
		if got.Status != group.TaskFailed || len(got.Missing) != 2 || got.Missing[0].Reason != group.PartFailed {
			t.Errorf("aggregate = %s missing %+v, want failed with both parts missing", got.Status, got.Missing)
		}
	})

	t.Run("no member runs the type", func(t *testing.T) {
		_, _, err := owner.gm.RunTask(ctx, g.GroupID, group.TaskRequest{TaskType: "nobody"})
		wantCode(t, err, wire.CodeCapabilityLacking)
	})
}
