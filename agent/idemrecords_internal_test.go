package agent

import (
	"context"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/agent/idemdb"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// TestIdempotencyRecordOfToday: a record in the form the store wrote
// before submits kept their task (status, content type and body as
// sent) still replays, as it was sent, until it expires.
func TestIdempotencyRecordOfToday(t *testing.T) {
	a := openParked(t, parkedConfig(t))
	defer closeParked(t, a)
	ctx := context.Background()
	created := a.clock.Now()
	// The JSON of the former store.IdemRecord, field for field.
	old := []byte(`{"request_hash":"h1","status":201,"content_type":"application/json","body":"eyJ0YXNrX2lkIjoidDEiLCJzdGF0dXMiOiJwZW5kaW5nIiwibWVzc2FnZSI6InRhc2sgYWNjZXB0ZWQifQ==","task_id":"t1","created_at":"` +
		created.UTC().Format(time.RFC3339Nano) + `"}`)
	if err := a.db.Update(ctx, func(tx *store.Tx) error { return idemdb.Put(tx, "admin", "old", created, old) }); err != nil {
		t.Fatal(err)
	}
	r := IdemRequest{Scope: "admin", Key: "old", Hash: "h1"}
	sub, err := a.Submit(ctx, parkedAdmin, &wire.SubmitRequest{TaskType: "keep", Payload: wire.JSONValue(`{}`)}, SubmitOptions{Idempotency: &r})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"task_id":"t1","status":"pending","message":"task accepted"}`
	if !sub.Replayed || sub.Task != nil || sub.Sent == nil || string(sub.Sent.Body) != want || sub.Sent.Status != 201 ||
		sub.Sent.ContentType != "application/json" || sub.Sent.TaskID != "t1" {
		t.Fatalf("replay of an old record = %+v (sent %+v), want %s as sent", sub, sub.Sent, want)
	}
	if got := a.IdempotentTask("admin", "old"); got != "t1" {
		t.Errorf("task of the old record = %q, want t1", got)
	}
}
