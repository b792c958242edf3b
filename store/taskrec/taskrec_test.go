package taskrec_test

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/store/taskrec"
	"github.com/synapse-edge/synapse/wire"
)

const payload = `{"device":"sensor-0042","reading":{"temperature":21.5,"humidity":48.2,"pressure":1013.25},"tags":["north","roof","calibrated"],"note":"a payload of about two hundred bytes"}`

// run moves t through the states with the events the agent writes
// (agent/engine.go): a status_update per transition, then for a final
// state the error event (when it failed) and the complete event.
func run(t *wire.Task, at time.Time, steps ...wire.Transition) []*wire.Event {
	var evs []*wire.Event
	add := func(typ wire.EventType, data []byte) {
		t.Seq++
		evs = append(evs, &wire.Event{TaskID: t.ID, Seq: t.Seq, Type: typ, At: wire.Time{Time: at}, Data: data})
	}
	for _, s := range steps {
		s.From, s.At = t.Status, wire.Time{Time: at}
		t.History = append(t.History, s)
		t.Status, t.UpdatedAt = s.Status, at
		if s.Status.Terminal() && s.Status == wire.StatusCompleted {
			t.Progress = 100
		}
		add(wire.EventStatus, wire.StatusEventJSON(&wire.StatusEventData{From: s.From, Message: s.Reason, Progress: t.Progress, Status: s.Status, TaskID: t.ID}))
		if s.Status.Terminal() {
			if t.ErrorCode != "" {
				add(wire.EventError, wire.ErrorEventJSON(&wire.ErrorEventData{Code: t.ErrorCode, Message: t.ErrorMessage,
					NumericCode: wire.NumericCode(t.ErrorCode), Recoverable: t.Recoverable, TaskID: t.ID}))
			}
			final := t.StatusResponse(true)
			final.ETag = `"` + t.ID + "-" + strconv.FormatUint(t.Seq+1, 10) + `"`
			data, err := wire.AppendStatusJSON(nil, final, true)
			if err != nil {
				panic(err)
			}
			add(wire.EventComplete, data)
		}
	}
	return evs
}

var t0 = time.Date(2026, 12, 2, 3, 54, 6, 109424690, time.UTC)

// cases are tasks as the agent writes them, with the events of their
// record.
func cases() map[string]struct {
	task *wire.Task
	evs  []*wire.Event
} {
	out := map[string]struct {
		task *wire.Task
		evs  []*wire.Event
	}{}
	echo := &wire.Task{ID: "01a234e3-5f9d-7664-ae78-4e483cc64e8a", Type: "echo", Status: wire.StatusIdle,
		Payload: wire.JSONValue(payload), Owner: "admin", CreatedAt: t0, StartedAt: t0}
	evs := run(echo, t0.Add(37*time.Microsecond), wire.Transition{Status: wire.StatusPending, Reason: "submitted"},
		wire.Transition{Status: wire.StatusConfirmed, Reason: "accepted"}, wire.Transition{Status: wire.StatusExecuting})
	echo.Result = echo.Payload
	evs = append(evs, run(echo, t0.Add(2*time.Millisecond), wire.Transition{Status: wire.StatusCompleted})...)
	out["sync echo"] = struct {
		task *wire.Task
		evs  []*wire.Event
	}{echo, evs}

	failed := &wire.Task{ID: "0190a6b2-0000-7000-8000-000000000002", Type: "sleep", Status: wire.StatusIdle,
		Payload: wire.JSONValue(`{ "ms" : 10, "html": "<b>&</b>" }`), CallbackURL: "http://127.0.0.1:9/cb", TTLSeconds: 30,
		Priority: "high", Target: "peer-b", CreatedAt: t0, Deadline: t0.Add(time.Hour),
		Origin: &wire.TaskOrigin{Peer: "peer-a", MessageID: "m-1"}, CancelRequested: true,
		MissingFields: []wire.MissingField{{Field: "x", Reason: "required", SuggestedValue: 1.5}}}
	evs = run(failed, t0.Add(time.Second), wire.Transition{Status: wire.StatusPending, Reason: "a reason of its own, ünïcode"})
	evs = append(evs, &wire.Event{TaskID: failed.ID, Seq: failed.Seq + 1, Type: wire.EventLog, At: wire.Time{Time: t0.Add(1500 * time.Millisecond)}, Data: wire.JSONValue(`{"line": "hello <world>"}`)})
	failed.Seq++
	evs = append(evs, &wire.Event{TaskID: failed.ID, Seq: failed.Seq + 1, Type: wire.EventProgress, At: wire.Time{Time: t0.Add(1500 * time.Millisecond)}, Data: nil})
	failed.Seq++
	failed.ErrorCode, failed.ErrorMessage, failed.Recoverable = wire.ErrorCode("execution_timeout"), "took too long", true
	failed.Result = wire.JSONValue(`{"partial":true}`)
	evs = append(evs, run(failed, t0.Add(3*time.Second), wire.Transition{Status: wire.StatusFailed, Reason: "timeout"})...)
	out["failed with extras"] = struct {
		task *wire.Task
		evs  []*wire.Event
	}{failed, evs}

	bare := &wire.Task{ID: "0190a6b2-0000-7000-8000-000000000003", Type: "t", Status: "a status of its own", Progress: -3,
		Payload: wire.JSONValue(`null`), UpdatedAt: t0}
	out["zero created_at, nil history"] = struct {
		task *wire.Task
		evs  []*wire.Event
	}{bare, nil}
	return out
}

// jsonTask is what the JSON record of t decodes to.
func jsonTask(t *testing.T, task *wire.Task) *wire.Task {
	t.Helper()
	raw, err := wire.AppendTaskJSON(nil, task, true)
	if err != nil {
		t.Fatal(err)
	}
	var got wire.Task
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	return &got
}

func jsonEvents(t *testing.T, evs []*wire.Event) []*wire.Event {
	t.Helper()
	var out []*wire.Event
	for _, e := range evs {
		raw, err := wire.AppendEventJSON(nil, e, true)
		if err != nil {
			t.Fatal(err)
		}
		var got wire.Event
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatal(err)
		}
		out = append(out, &got)
	}
	return out
}

// The layout decodes to what the JSON record decodes to, task and
// events, and is a fraction of its size.
func TestDecodeMatchesJSON(t *testing.T) {
	for name, c := range cases() {
		t.Run(name, func(t *testing.T) {
			b, err := taskrec.AppendTask(nil, c.task)
			if err != nil {
				t.Fatal(err)
			}
			taskEnd := len(b)
			if b, err = taskrec.AppendEvents(b, c.task, c.evs); err != nil {
				t.Fatal(err)
			}
			var got wire.Task
			rest, err := taskrec.DecodeTask(c.task.ID, b, &got)
			if err != nil {
				t.Fatal(err)
			}
			if want := jsonTask(t, c.task); !reflect.DeepEqual(&got, want) {
				t.Fatalf("task\n got %+v\nwant %+v", &got, want)
			}
			evs, err := taskrec.DecodeEvents(&got, rest, 0, 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			if want := jsonEvents(t, c.evs); !reflect.DeepEqual(evs, want) {
				t.Fatalf("events\n got %v\nwant %v", evs, want)
			}
			// after and limit pick what the readers ask for.
			if len(c.evs) > 2 {
				evs, err = taskrec.DecodeEvents(&got, rest, 1, 1, nil)
				if err != nil || len(evs) != 1 || evs[0].Seq != 2 {
					t.Fatalf("after 1, limit 1: %v, %v", evs, err)
				}
			}
			j, _ := wire.AppendTaskJSON(nil, c.task, true)
			for _, e := range c.evs {
				j, _ = wire.AppendEventJSON(j, e, true)
			}
			t.Logf("%d bytes (task %d), JSON %d", len(b), taskEnd, len(j))
		})
	}
}

// The sync echo task of the measurements (~200 bytes of payload, its
// five events) fits in well under 1 KiB.
func TestEchoRecordSize(t *testing.T) {
	c := cases()["sync echo"]
	b, err := taskrec.AppendTask(nil, c.task)
	if err == nil {
		b, err = taskrec.AppendEvents(b, c.task, c.evs)
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 300+len(payload) {
		t.Fatalf("echo record %d bytes, want ≤ %d", len(b), 300+len(payload))
	}
}

// Known answer: the layout of a small task, byte for byte.
func TestKnownAnswer(t *testing.T) {
	task := &wire.Task{ID: "id", Type: "echo", Status: wire.StatusCompleted, Progress: 100,
		Payload: wire.JSONValue(`{}`), Result: wire.JSONValue(`{}`), CreatedAt: time.Unix(1, 5).UTC(), UpdatedAt: time.Unix(2, 0).UTC(), Seq: 2,
		History: []wire.Transition{{From: wire.StatusIdle, Status: wire.StatusPending, At: wire.Time{Time: time.Unix(1, 0).UTC()}, Reason: "submitted"}}}
	evs := []*wire.Event{{TaskID: "id", Seq: 1, Type: wire.EventStatus, At: wire.Time{Time: time.Unix(1, 0).UTC()},
		Data: wire.StatusEventJSON(&wire.StatusEventData{From: wire.StatusIdle, Message: "submitted", Status: wire.StatusPending, TaskID: "id"})},
		{TaskID: "id", Seq: 2, Type: wire.EventLog, At: wire.Time{Time: time.Unix(1, 0).UTC()}, Data: wire.JSONValue(`1`)}}
	b, err := taskrec.AppendTask(nil, task)
	if err == nil {
		b, err = taskrec.AppendEvents(b, task, evs)
	}
	if err != nil {
		t.Fatal(err)
	}
	// flags 01 (result is the payload), "echo", completed (11), progress
	// 100 (c8 01), payload "{}", three empty strings, ttl 0, three more, created
	// 1 s + 5 ns, updated +1 s + 0, seq 2, one transition idle → pending at
	// -0 ms "submitted" (1); events: +1 status of entry 0 progress 0 at 0,
	// +1 raw "log" "1".
	const want = "01" + "046563686f" + "0b" + "c801" + "027b7d" + "000000" + "00" + "000000" +
		"0205" + "0200" + "02" + "01" + "0102" + "00" + "01" +
		"0101" + "00" + "0000" + "0104" + "00" + "036c6f67" + "0131"
	if got := hex.EncodeToString(b); got != want {
		t.Fatalf("layout\n got %s\nwant %s", got, want)
	}
}

// What the layout cannot hold exactly it refuses, and the store writes
// JSON.
func TestUnsupported(t *testing.T) {
	for name, task := range map[string]*wire.Task{
		"zone":      {ID: "a", CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("x", 3600))},
		"year":      {ID: "a", CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		"not utf-8": {ID: "a", ErrorMessage: "\xff"},
	} {
		if _, err := taskrec.AppendTask(nil, task); !errors.Is(err, taskrec.ErrUnsupported) {
			t.Errorf("%s: %v, want ErrUnsupported", name, err)
		}
	}
}

// Hostile bytes are an error, never a panic; every prefix of a good
// record is one too.
func TestDecodeHostile(t *testing.T) {
	c := cases()["failed with extras"]
	b, _ := taskrec.AppendTask(nil, c.task)
	n := len(b)
	b, _ = taskrec.AppendEvents(b, c.task, c.evs)
	for i := range n {
		var got wire.Task
		if _, err := taskrec.DecodeTask(c.task.ID, b[:i], &got); err == nil {
			t.Fatalf("prefix of %d bytes decodes", i)
		}
	}
	var got wire.Task
	rest, err := taskrec.DecodeTask(c.task.ID, b, &got)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(rest); i++ {
		evs, err := taskrec.DecodeEvents(&got, rest[:i], 0, 0, nil)
		if err == nil && len(evs) == len(c.evs) {
			t.Fatalf("events prefix of %d bytes decodes to all", i)
		}
	}
	for _, bad := range [][]byte{{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, {0x80}, {0x00, 0x05, 'a'}} {
		if _, err := taskrec.DecodeTask("x", bad, &got); err == nil {
			t.Fatalf("%x decodes", bad)
		}
	}
	if _, err := taskrec.DecodeEvents(&got, []byte{1, 1, 0, 0xff, 0x01, 0}, 0, 0, nil); err == nil {
		t.Fatal("a history index past the history decodes")
	}
}

func BenchmarkEcho(b *testing.B) {
	c := cases()["sync echo"]
	rec, _ := taskrec.AppendTask(nil, c.task)
	rec, _ = taskrec.AppendEvents(rec, c.task, c.evs)
	b.Run("encode", func(b *testing.B) {
		b.SetBytes(int64(len(rec)))
		b.ReportAllocs()
		buf := make([]byte, 0, 1024)
		for range b.N {
			out, _ := taskrec.AppendTask(buf[:0], c.task)
			if _, err := taskrec.AppendEvents(out, c.task, c.evs); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.SetBytes(int64(len(rec)))
		b.ReportAllocs()
		var t wire.Task
		for range b.N {
			if _, err := taskrec.DecodeTask(c.task.ID, rec, &t); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encode-json", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 4096)
		for range b.N {
			out, _ := wire.AppendTaskJSON(buf[:0], c.task, true)
			for _, e := range c.evs {
				out, _ = wire.AppendEventJSON(out, e, true)
			}
		}
	})
	b.Run("decode-json", func(b *testing.B) {
		raw, _ := wire.AppendTaskJSON(nil, c.task, true)
		b.ReportAllocs()
		for range b.N {
			var t wire.Task
			if err := json.Unmarshal(raw, &t); err != nil {
				b.Fatal(err)
			}
		}
	})
}
