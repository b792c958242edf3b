package wire

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// jsonTasks are tasks exercising every field of the appenders, each
// omitted and present, with strings that need escaping.
func jsonTasks() []*Task {
	at := time.Date(2026, 11, 30, 19, 5, 6, 789123456, time.UTC)
	zone := time.FixedZone("x", 5*3600+1800)
	odd := "a\"b\\c\n\r\t\b\f\x00\x1f <tag> & \u2028\u2029 é 漢 \xff\xfe end"
	full := &Task{
		ID: "0190-abc", Type: "echo", Status: StatusFailed, Progress: 42,
		Payload: JSONValue(`{"n":1,"msg":"bench","html":"<b>&</b>"}`), Result: JSONValue(`[1,2,{"a":null}]`),
		ErrorCode: CodeExecutionFailed, ErrorMessage: odd, Recoverable: true, CallbackURL: "http://127.0.0.1:1/cb?a=1&b=2",
		TTLSeconds: 30, Priority: "high", Target: "agent-b", Origin: &TaskOrigin{Peer: "p<1>", MessageID: "m"},
		CancelRequested: true,
		Human: &TaskNeedHumanPayload{TaskID: "t", Reason: Reason{Message: odd}, Options: []HumanOption{{Field: "f", Value: 1.5}},
			Context: &HumanContext{TaskSummary: "s"}},
		Owner:         "admin",
		MissingFields: []MissingField{{Field: "x", Reason: "missing", SuggestedValue: "<v>"}},
		CreatedAt:     at, UpdatedAt: at.In(zone), StartedAt: at.Add(time.Millisecond), Deadline: at.Add(time.Hour).In(zone),
		Seq: 12,
		History: []Transition{
			{Status: StatusPending, At: Time{at}, Reason: "submitted"},
			{From: StatusPending, Status: StatusConfirmed, At: Time{at.In(zone)}},
			{From: StatusConfirmed, Status: StatusFailed, At: Time{at}, Reason: odd},
		},
	}
	spaced := *full
	spaced.Payload = JSONValue("{ \"a\" : [ 1 , 2 ],\n\t\"s\": \"x y\u2028\" }")
	spaced.Result = JSONValue(`"é"`)
	return []*Task{
		{},
		{ID: "only", History: []Transition{}},
		{ID: "t", Type: "echo", Status: StatusCompleted, Progress: 100, Payload: JSONValue(`{"msg":"hello"}`), Result: JSONValue(`{"msg":"hello"}`),
			CreatedAt: at, UpdatedAt: at, Seq: 5, History: []Transition{{Status: StatusPending, At: Time{at}}}},
		{ID: "o", Origin: &TaskOrigin{Peer: "edge_a"}, Result: JSONValue(`{"a":"<b>"}`)},
		full,
		&spaced,
	}
}

func TestAppendTaskJSON(t *testing.T) {
	for i, task := range jsonTasks() {
		want, err := json.Marshal(task)
		if err != nil {
			t.Fatal(err)
		}
		got, err := AppendTaskJSON([]byte("prefix"), task, true)
		if err != nil {
			t.Fatalf("task %d: %v", i, err)
		}
		if !bytes.Equal(got[len("prefix"):], want) {
			t.Errorf("task %d:\n got %s\nwant %s", i, got[len("prefix"):], want)
		}
		want = refJSON(t, task, false)
		got, _ = AppendTaskJSON(nil, task, false)
		if !bytes.Equal(got, want) {
			t.Errorf("task %d without html escaping:\n got %s\nwant %s", i, got, want)
		}
		for _, full := range []bool{false, true} {
			r := task.StatusResponse(full)
			for _, html := range []bool{false, true} {
				want := refJSON(t, r, html)
				got, err := AppendStatusJSON(nil, r, html)
				if !html {
					if viaCodec, _ := JSON.Marshal(r); !bytes.Equal(viaCodec, want) {
						t.Errorf("task %d status through the JSON codec:\n got %s\nwant %s", i, viaCodec, want)
					}
				}
				if err != nil || !bytes.Equal(got, want) {
					t.Errorf("task %d status (full %v, html %v): %v\n got %s\nwant %s", i, full, html, err, got, want)
				}
			}
		}
		for _, e := range []*Event{
			{TaskID: task.ID, Seq: task.Seq, Type: EventStatus, At: Time{task.UpdatedAt}, Data: task.Payload},
			{TaskID: task.ID},
		} {
			want, _ := json.Marshal(e)
			got, err := AppendEventJSON(nil, e, true)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("task %d event: %v\n got %s\nwant %s", i, err, got, want)
			}
		}
	}
}

// refJSON is what encoding/json writes for v, with or without HTML escaping.
func refJSON(t testing.TB, v any, html bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(html)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func TestAppendTaskJSONRefuses(t *testing.T) {
	bad := &Task{ID: "x", Payload: JSONValue(`{"a": nope}`)}
	if _, err := AppendTaskJSON(nil, bad, true); err == nil {
		t.Error("invalid payload with spaces encoded without error")
	}
	if _, err := AppendTaskJSON(nil, bad, false); err == nil {
		t.Error("invalid payload with spaces encoded without error (no html)")
	}
	far := &Task{ID: "x", CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}
	if _, err := AppendTaskJSON(nil, far, true); err == nil {
		t.Error("year 10000 encoded without error")
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "a\"b\\c\n\x00", "<&>", "\u2028\xff\xc3", "漢字\x7f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendString(nil, s, true); !bytes.Equal(got, want) {
			t.Errorf("html: got %s want %s", got, want)
		}
		want = refJSON(t, s, false)
		if got := appendString(nil, s, false); !bytes.Equal(got, want) {
			t.Errorf("no html: got %s want %s", got, want)
		}
	})
}

func FuzzAppendTime(f *testing.F) {
	for _, v := range []int64{0, 1, -1, 1e9, 1796068366792263262, -9e18, 9e18} {
		f.Add(v, int32(0))
	}
	f.Add(int64(1e18), int32(5*3600+1800))
	f.Fuzz(func(t *testing.T, ns int64, offset int32) {
		tm := time.Unix(0, ns).In(time.FixedZone("z", int(offset%(24*3600))))
		want := tm.UTC().AppendFormat(nil, TimeFormat)
		if got := appendTimeFormat(nil, tm); !bytes.Equal(got, want) {
			t.Errorf("%v: got %s want %s", tm, got, want)
		}
		if got := FormatTime(tm); got != string(want) {
			t.Errorf("FormatTime(%v) = %s want %s", tm, got, want)
		}
	})
}

// Times of every year the formatter writes itself, and beyond.
func TestAppendTimeYears(t *testing.T) {
	for _, y := range []int{-1, 0, 1, 9, 10, 99, 100, 999, 1000, 1970, 2026, 9999, 10000} {
		tm := time.Date(y, time.December, 31, 23, 59, 59, 999_999_999, time.UTC)
		want := tm.AppendFormat(nil, TimeFormat)
		if got := appendTimeFormat(nil, tm); !bytes.Equal(got, want) {
			t.Errorf("year %d: got %s want %s", y, got, want)
		}
	}
}

// AppendCanonicalJSONString escapes only what JSON requires (RFC 8785):
// quotes, backslashes and control characters; HTML characters and the
// line separators stay as they are, and an invalid byte is the character
// U+FFFD. AppendJSONString escapes as encoding/json does.
func TestAppendCanonicalJSONString(t *testing.T) {
	for _, c := range []struct{ in, canonical, std string }{
		{"plain", `"plain"`, `"plain"`},
		{"a\"b\\c", `"a\"b\\c"`, `"a\"b\\c"`},
		{"\n\t\x01", `"\n\t\u0001"`, `"\n\t\u0001"`},
		{"<a&b>", `"<a&b>"`, `"\u003ca\u0026b\u003e"`},
		{"x\u2028y\u2029", "\"x\u2028y\u2029\"", `"x\u2028y\u2029"`},
		{"bad\xffbyte", "\"bad\ufffdbyte\"", `"bad\ufffdbyte"`},
		{"é日本", `"é日本"`, `"é日本"`},
	} {
		if got := string(AppendCanonicalJSONString(nil, c.in)); got != c.canonical {
			t.Errorf("AppendCanonicalJSONString(%q) = %s, want %s", c.in, got, c.canonical)
		}
		if got := string(AppendJSONString(nil, c.in, true)); got != c.std {
			t.Errorf("AppendJSONString(%q, html) = %s, want %s", c.in, got, c.std)
		}
		std, _ := json.Marshal(c.in)
		if string(std) != c.std {
			t.Errorf("the test's own want for %q is %s, encoding/json writes %s", c.in, c.std, std)
		}
	}
}
