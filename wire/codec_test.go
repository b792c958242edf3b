package wire_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/wire"
)

// TestJSONNoHTMLEscape: answers keep <, > and & as they are.
func TestJSONNoHTMLEscape(t *testing.T) {
	got, err := wire.JSON.Marshal(map[string]string{"message": "send Authorization: Bearer <token> & retry"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"message":"send Authorization: Bearer <token> & retry"}`; string(got) != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

// BenchmarkJSONMarshalTask encodes a finished task's full answer, the
// most frequent JSON answer (compare with encoding/json's Marshal:
// -bench 'JSONMarshalTask|StdJSONMarshalTask').
func BenchmarkJSONMarshalTask(b *testing.B) {
	r := benchTask().StatusResponse(true)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := wire.JSON.Marshal(r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStdJSONMarshalTask(b *testing.B) {
	r := benchTask().StatusResponse(true)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(r); err != nil {
			b.Fatal(err)
		}
	}
}

func benchTask() *wire.Task {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	return &wire.Task{ID: "01a22cf4-5523-717f-86a6-6969adf801bc", Type: "echo", Status: wire.StatusCompleted, Progress: 100,
		Payload: wire.JSONValue(`{"msg":"hi"}`), Result: wire.JSONValue(`{"msg":"hi"}`), CreatedAt: now, UpdatedAt: now, Seq: 5,
		History: []wire.Transition{{From: wire.StatusIdle, Status: wire.StatusPending, At: wire.Time{Time: now}, Reason: "submitted"},
			{From: wire.StatusPending, Status: wire.StatusCompleted, At: wire.Time{Time: now}}}}
}
