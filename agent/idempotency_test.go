package agent_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/agent/idemdb"
	"github.com/synapse-edge/synapse/wire"
)

// TestIdempotencyKeys: a key is scoped, refused for another request,
// replayed for the same, and checked.
func TestIdempotencyKeys(t *testing.T) {
	ctx := context.Background()
	a := openAgent(t, testConfig(t), newFakeClock())
	r := agent.IdemRequest{Scope: "admin", Key: "k", Hash: "h1"}
	want := &agent.IdemAnswer{Status: 201, ContentType: "application/json", Body: []byte(`{"x":1}`)}
	fn := func() (*agent.IdemAnswer, error) { return want, nil }
	if _, replayed, err := a.Idempotent(ctx, r, fn); err != nil || replayed {
		t.Fatalf("first = %v, %v", replayed, err)
	}
	t.Run("same request replays", func(t *testing.T) {
		ans, replayed, err := a.Idempotent(ctx, r, fn)
		if err != nil || !replayed || ans.Status != want.Status || ans.ContentType != want.ContentType || string(ans.Body) != string(want.Body) {
			t.Errorf("replayed answer = %+v, %v, %v; want %+v", ans, replayed, err, want)
		}
	})
	t.Run("another scope is another key", func(t *testing.T) {
		if _, replayed, err := a.Idempotent(ctx, agent.IdemRequest{Scope: "other", Key: "k", Hash: "h1"}, fn); err != nil || replayed {
			t.Fatalf("in another scope = %v, %v", replayed, err)
		}
	})
	t.Run("another request is refused", func(t *testing.T) {
		_, _, err := a.Idempotent(ctx, agent.IdemRequest{Scope: "admin", Key: "k", Hash: "h2"}, fn)
		if we := wantCode(t, err, wire.CodeIdempotencyMismatch); we.Details["idempotency_key"] != "k" {
			t.Errorf("details = %v, want idempotency_key k", we.Details)
		}
	})
	t.Run("bad keys", func(t *testing.T) {
		for name, key := range map[string]string{"too long": strings.Repeat("k", idemdb.MaxKey+1),
			"tab": "a\tb", "non-ASCII": "a\xffb", "DEL": "a\x7fb"} {
			_, _, err := a.Idempotent(ctx, agent.IdemRequest{Scope: "admin", Key: key, Hash: "h"}, fn)
			if we := wantCode(t, err, wire.CodeInvalidParams); we.Details["field"] != "idempotency_key" {
				t.Errorf("%s: details = %v, want field idempotency_key", name, we.Details)
			}
		}
		if err := idemdb.CheckKey(strings.Repeat("k", idemdb.MaxKey)); err != nil {
			t.Errorf("a key of the longest length: %v", err)
		}
	})
}

func keyed(r agent.IdemRequest, wait time.Duration) agent.SubmitOptions {
	return agent.SubmitOptions{Wait: wait, Idempotency: &r}
}

// TestIdempotencyExpiry: after IdempotencyTTL a key is free again, also
// for a task (whose write refuses a key that has a record) before
// retention has deleted the old record.
func TestIdempotencyExpiry(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	a := openAgent(t, testConfig(t), clock)
	r := agent.IdemRequest{Scope: "admin", Key: "daily", Hash: "h"}
	first, err := a.Submit(ctx, admin, &wire.SubmitRequest{TaskType: "echo"}, keyed(r, 0))
	if err != nil || first.Replayed {
		t.Fatalf("first submit = %+v, %v", first, err)
	}
	clock.Advance(agent.IdempotencyTTL - time.Second)
	if sub, err := a.Submit(ctx, admin, &wire.SubmitRequest{TaskType: "echo"}, keyed(r, 0)); err != nil || !sub.Replayed || sub.ID != first.ID || sub.Status != first.Status {
		t.Fatalf("within the TTL = %+v, %v; want the first task replayed", sub, err)
	}
	clock.Advance(2 * time.Second)
	again, err := a.Submit(ctx, admin, &wire.SubmitRequest{TaskType: "echo"}, keyed(r, 0))
	if err != nil || again.Replayed || again.ID == first.ID {
		t.Fatalf("after the TTL = %+v, %v; want a new task", again, err)
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
	type result struct {
		sub *agent.Submitted
		err error
	}
	done := make(chan result, 1)
	go func() {
		sub, err := a.Submit(ctx, admin, &wire.SubmitRequest{TaskType: "block"}, keyed(r, 30*time.Second))
		done <- result{sub, err}
	}()
	id := <-started
	_, err := a.Submit(ctx, admin, &wire.SubmitRequest{TaskType: "block"}, keyed(r, 30*time.Second))
	wantCode(t, err, wire.CodeIdempotencyInFlight)
	if _, err := a.Cancel(ctx, id); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.err != nil || res.sub.Replayed || res.sub.Status != wire.StatusCancelled {
		t.Fatalf("first = %+v, %v; want the cancelled task", res.sub, res.err)
	}
	sub, err := a.Submit(ctx, admin, &wire.SubmitRequest{TaskType: "block"}, keyed(r, 30*time.Second))
	if err != nil || !sub.Replayed || sub.ID != id || sub.Status != wire.StatusCancelled || sub.ETag() != res.sub.ETag() {
		t.Errorf("replay = %+v, %v; want the final task %s as first answered", sub, err, id)
	}
}

// BenchmarkSubmitIdempotent is the cost of an idempotency key on a durable
// submit (no wait): "none" is Submit, "key" Submit with a new
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
			if _, err := a.Submit(ctx, admin, req(), agent.SubmitOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("key", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			n++
			r := agent.IdemRequest{Scope: "admin", Key: "k-" + strconv.Itoa(n), Hash: "h"}
			if _, err := a.Submit(ctx, admin, req(), keyed(r, 0)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("replay", func(b *testing.B) {
		r := agent.IdemRequest{Scope: "admin", Key: "replayed", Hash: "h"}
		if _, err := a.Submit(ctx, admin, req(), keyed(r, 0)); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if sub, err := a.Submit(ctx, admin, req(), keyed(r, 0)); err != nil || !sub.Replayed {
				b.Fatal(sub, err)
			}
		}
	})
}
