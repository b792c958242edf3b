package agent_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/wire"
)

// answerOf is a test rendering of a task as an idempotent answer.
func answerOf(t *wire.Task) *agent.IdemAnswer {
	return &agent.IdemAnswer{Status: 201, ContentType: wire.ContentJSON, Body: []byte(`{"task_id":"` + t.ID + `","status":"` + string(t.Status) + `"}`)}
}

func TestClaimIdempotency(t *testing.T) {
	ctx := context.Background()
	a := openAgent(t, testConfig(t), newFakeClock())
	r := agent.IdemRequest{Scope: "admin", Key: "k", Hash: "h1"}

	c, ans, err := a.ClaimIdempotency(ctx, r)
	if err != nil || ans != nil || c == nil {
		t.Fatalf("first claim = %v, %v, %v; want a claim", c, ans, err)
	}
	t.Run("in flight", func(t *testing.T) {
		for _, h := range []string{"h1", "h2"} {
			_, _, err := a.ClaimIdempotency(ctx, agent.IdemRequest{Scope: "admin", Key: "k", Hash: h})
			if we := wantCode(t, err, wire.CodeIdempotencyInFlight); !we.Retriable || we.Status() != 409 {
				t.Errorf("in flight error = %+v (status %d), want retriable 409", we, we.Status())
			}
		}
	})
	t.Run("another scope is another key", func(t *testing.T) {
		c2, _, err := a.ClaimIdempotency(ctx, agent.IdemRequest{Scope: "other", Key: "k", Hash: "h1"})
		if err != nil || c2 == nil {
			t.Fatalf("claim in another scope = %v, %v", c2, err)
		}
		c2.Release()
	})
	want := &agent.IdemAnswer{Status: 201, ContentType: "application/json", Body: []byte(`{"x":1}`)}
	if err := c.Store(ctx, want); err != nil {
		t.Fatal(err)
	}
	c.Release()
	c.Release() // safe twice

	t.Run("same request replays", func(t *testing.T) {
		c, ans, err := a.ClaimIdempotency(ctx, r)
		if err != nil || c != nil || ans == nil {
			t.Fatalf("claim after the answer = %v, %v, %v; want the stored answer", c, ans, err)
		}
		if ans.Status != want.Status || ans.ContentType != want.ContentType || string(ans.Body) != string(want.Body) {
			t.Errorf("replayed answer = %+v, want %+v", ans, want)
		}
	})
	t.Run("another request is refused", func(t *testing.T) {
		_, _, err := a.ClaimIdempotency(ctx, agent.IdemRequest{Scope: "admin", Key: "k", Hash: "h2"})
		if we := wantCode(t, err, wire.CodeIdempotencyMismatch); we.Details["idempotency_key"] != "k" {
			t.Errorf("details = %v, want idempotency_key k", we.Details)
		}
	})
	t.Run("a replay holds no claim", func(t *testing.T) {
		// The replays above released the key: a replay right after works.
		if _, ans, err := a.ClaimIdempotency(ctx, r); err != nil || ans == nil {
			t.Errorf("second replay = %v, %v", ans, err)
		}
	})
	t.Run("bad keys", func(t *testing.T) {
		for name, key := range map[string]string{"too long": strings.Repeat("k", agent.MaxIdempotencyKey+1),
			"tab": "a\tb", "non-ASCII": "a\xffb", "DEL": "a\x7fb"} {
			_, _, err := a.ClaimIdempotency(ctx, agent.IdemRequest{Scope: "admin", Key: key, Hash: "h"})
			if we := wantCode(t, err, wire.CodeInvalidParams); we.Details["field"] != "idempotency_key" {
				t.Errorf("%s: details = %v, want field idempotency_key", name, we.Details)
			}
		}
		if err := agent.CheckIdempotencyKey(strings.Repeat("k", agent.MaxIdempotencyKey)); err != nil {
			t.Errorf("a key of the longest length: %v", err)
		}
	})
}

// TestIdempotencyExpiry: after IdempotencyTTL a key is free again, also
// for a task (whose write refuses a key that has a record) before
// retention has deleted the old record.
func TestIdempotencyExpiry(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	a := openAgent(t, testConfig(t), clock)
	r := agent.IdemRequest{Scope: "admin", Key: "daily", Hash: "h"}
	first, ans, replayed, err := a.SubmitIdempotent(ctx, admin, &wire.SubmitRequest{TaskType: "echo"}, r, 0, answerOf)
	if err != nil || replayed || first == nil || ans.TaskID != first.ID {
		t.Fatalf("first submit = %v, %+v, %v, %v", first, ans, replayed, err)
	}
	clock.Advance(agent.IdempotencyTTL - time.Second)
	if _, ans, replayed, err := a.SubmitIdempotent(ctx, admin, &wire.SubmitRequest{TaskType: "echo"}, r, 0, answerOf); err != nil || !replayed || ans.TaskID != first.ID {
		t.Fatalf("within the TTL = %+v, replayed %v, %v; want the first task replayed", ans, replayed, err)
	}
	clock.Advance(2 * time.Second)
	again, ans, replayed, err := a.SubmitIdempotent(ctx, admin, &wire.SubmitRequest{TaskType: "echo"}, r, 0, answerOf)
	if err != nil || replayed || again == nil || again.ID == first.ID || ans.TaskID != again.ID {
		t.Fatalf("after the TTL = %v, %+v, replayed %v, %v; want a new task", again, ans, replayed, err)
	}
	if got := listIDs(t, a); len(got) != 2 {
		t.Errorf("tasks = %v, want two", got)
	}
}

func TestIdempotent(t *testing.T) {
	ctx := context.Background()
	a := openAgent(t, testConfig(t), newFakeClock())
	r := agent.IdemRequest{Scope: "admin", Key: "g", Hash: "h"}
	runs := 0
	refuse := errors.New("refused")
	fail := true
	fn := func() (*agent.IdemAnswer, error) {
		runs++
		if fail {
			return nil, refuse
		}
		return &agent.IdemAnswer{Status: 201, ContentType: "application/json", Body: []byte(`{"run":1}`)}, nil
	}
	if _, _, err := a.Idempotent(ctx, r, fn); !errors.Is(err, refuse) {
		t.Fatalf("failing run = %v, want its error", err)
	}
	fail = false
	ans, replayed, err := a.Idempotent(ctx, r, fn)
	if err != nil || replayed || string(ans.Body) != `{"run":1}` {
		t.Fatalf("retry after a refusal = %+v, %v, %v; want a fresh answer", ans, replayed, err)
	}
	ans2, replayed, err := a.Idempotent(ctx, r, fn)
	if err != nil || !replayed || string(ans2.Body) != string(ans.Body) {
		t.Fatalf("repeat = %+v, %v, %v; want the answer replayed", ans2, replayed, err)
	}
	if runs != 2 {
		t.Errorf("fn ran %d times, want 2 (the refusal and the first success)", runs)
	}
}

// TestSubmitIdempotentWait: in the sync mode, a task stored before it is
// final has its stored answer replaced by the final one.
func TestSubmitIdempotentWait(t *testing.T) {
	ctx := context.Background()
	started := make(chan string, 1)
	a := openAgent(t, testConfig(t), nil, blockHandler("block", false, started))
	r := agent.IdemRequest{Scope: "admin", Key: "sync", Hash: "h"}
	render := func(t *wire.Task) *agent.IdemAnswer {
		ans := answerOf(t)
		if t.Status.Terminal() {
			ans.Status = 200
		}
		return ans
	}
	type result struct {
		t        *wire.Task
		ans      *agent.IdemAnswer
		replayed bool
		err      error
	}
	done := make(chan result, 1)
	go func() {
		t, ans, replayed, err := a.SubmitIdempotent(ctx, admin, &wire.SubmitRequest{TaskType: "block"}, r, 30*time.Second, render)
		done <- result{t, ans, replayed, err}
	}()
	id := <-started
	_, _, err := a.ClaimIdempotency(ctx, r)
	wantCode(t, err, wire.CodeIdempotencyInFlight)
	if _, err := a.Cancel(ctx, id); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.err != nil || res.replayed || res.ans.Status != 200 || res.t.Status != wire.StatusCancelled {
		t.Fatalf("first = %+v, %v; want 200 with the cancelled task", res, res.err)
	}
	_, ans, replayed, err := a.SubmitIdempotent(ctx, admin, &wire.SubmitRequest{TaskType: "block"}, r, 30*time.Second, render)
	if err != nil || !replayed || ans.Status != 200 || string(ans.Body) != string(res.ans.Body) || ans.TaskID != id {
		t.Errorf("replay = %+v, %v, %v; want the final answer %s of task %s", ans, replayed, err, res.ans.Body, id)
	}
}

// BenchmarkSubmitIdempotent is the cost of an idempotency key on a durable
// submit (no wait): "none" is Submit, "key" SubmitIdempotent with a new
// key each time (a read of the key, the record written with the task),
// "replay" a repeated request answered from its record.
func BenchmarkSubmitIdempotent(b *testing.B) {
	a := benchAgent(b, func(c *agent.Config) { c.MaxConcurrentTasks = 1000 })
	ctx := context.Background()
	req := func() *wire.SubmitRequest {
		return &wire.SubmitRequest{TaskType: "echo", Payload: wire.JSONValue(`{"msg":"hello"}`)}
	}
	n := 0
	b.Run("none", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := a.Submit(ctx, admin, req(), nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("key", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			n++
			r := agent.IdemRequest{Scope: "admin", Key: "k-" + strconv.Itoa(n), Hash: "h"}
			if _, _, _, err := a.SubmitIdempotent(ctx, admin, req(), r, 0, answerOf); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("replay", func(b *testing.B) {
		r := agent.IdemRequest{Scope: "admin", Key: "replayed", Hash: "h"}
		if _, _, _, err := a.SubmitIdempotent(ctx, admin, req(), r, 0, answerOf); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, _, replayed, err := a.SubmitIdempotent(ctx, admin, req(), r, 0, answerOf); err != nil || !replayed {
				b.Fatal(replayed, err)
			}
		}
	})
}
