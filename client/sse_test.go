package client_test

import (
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/client"
)

// readAll returns every event of stream and the error that ended it.
func readAll(t *testing.T, stream string) ([]client.Event, *client.EventReader, error) {
	t.Helper()
	rd := client.NewEventReader(strings.NewReader(stream))
	var evs []client.Event
	for range 1000 {
		ev, err := rd.Next()
		if err != nil {
			return evs, rd, err
		}
		evs = append(evs, ev)
	}
	t.Fatal("more than 1000 events")
	return nil, nil, nil
}

func TestEventReader(t *testing.T) {
	tests := []struct {
		name   string
		stream string
		want   []client.Event
	}{
		{
			name:   "task events",
			stream: "event: status_update\nid: 1\ndata: {\"status\":\"executing\"}\n\nevent: progress\nid: 2\ndata: {\"progress\":50}\n\nevent: complete\nid: 3\ndata: {\"status\":\"completed\"}\n\n",
			want: []client.Event{
				{Type: "status_update", ID: "1", Data: []byte(`{"status":"executing"}`)},
				{Type: "progress", ID: "2", Data: []byte(`{"progress":50}`)},
				{Type: "complete", ID: "3", Data: []byte(`{"status":"completed"}`)},
			},
		},
		{
			name:   "multi-line data joined with LF",
			stream: "event: log\ndata: first\ndata:second\ndata\n\n",
			want:   []client.Event{{Type: "log", Data: []byte("first\nsecond\n")}},
		},
		{
			name:   "CRLF and CR line endings",
			stream: "event: log\r\nid: 9\r\ndata: a\r\n\r\nevent: log\rdata: b\r\r",
			want: []client.Event{
				{Type: "log", ID: "9", Data: []byte("a")},
				{Type: "log", ID: "9", Data: []byte("b")},
			},
		},
		{
			name:   "comments and unknown fields ignored",
			stream: ": keep-alive\n\nfoo: bar\ndata: x\n: inside\n\n",
			want:   []client.Event{{Type: "message", Data: []byte("x")}},
		},
		{
			name:   "block without data dispatches nothing and resets type",
			stream: "event: progress\nid: 4\n\ndata: y\n\n",
			want:   []client.Event{{Type: "message", ID: "4", Data: []byte("y")}},
		},
		{
			name:   "only the first space after the colon is dropped",
			stream: "data:  two spaces\n\n",
			want:   []client.Event{{Type: "message", Data: []byte(" two spaces")}},
		},
		{
			name:   "id with NUL ignored",
			stream: "id: 5\ndata: a\n\nid: 6\x00x\ndata: b\n\n",
			want: []client.Event{
				{Type: "message", ID: "5", Data: []byte("a")},
				{Type: "message", ID: "5", Data: []byte("b")},
			},
		},
		{
			name:   "byte order mark at the start",
			stream: "\xef\xbb\xbfevent: log\ndata: z\n\n",
			want:   []client.Event{{Type: "log", Data: []byte("z")}},
		},
		{
			name:   "unterminated last event dropped",
			stream: "data: kept\n\ndata: lost",
			want:   []client.Event{{Type: "message", Data: []byte("kept")}},
		},
		{
			name:   "empty stream",
			stream: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, err := readAll(t, tt.stream)
			if !errors.Is(err, io.EOF) {
				t.Fatalf("end error = %v, want io.EOF", err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d events %q, want %d %q", len(got), got, len(tt.want), tt.want)
			}
			for i := range got {
				if got[i].Type != tt.want[i].Type || got[i].ID != tt.want[i].ID || string(got[i].Data) != string(tt.want[i].Data) {
					t.Errorf("event %d = {%q %q %q}, want {%q %q %q}", i,
						got[i].Type, got[i].ID, got[i].Data, tt.want[i].Type, tt.want[i].ID, tt.want[i].Data)
				}
			}
		})
	}
}

func TestEventReaderRetryAndLastID(t *testing.T) {
	_, rd, err := readAll(t, "retry: 1500\nid: 12\ndata: a\n\nretry: soon\n\n")
	if !errors.Is(err, io.EOF) {
		t.Fatalf("end error = %v, want io.EOF", err)
	}
	if got, want := rd.Retry(), 1500*time.Millisecond; got != want {
		t.Errorf("Retry() = %v, want %v", got, want)
	}
	if got, want := rd.LastEventID(), "12"; got != want {
		t.Errorf("LastEventID() = %q, want %q", got, want)
	}
}

func TestEventReaderLastIDOnlyFromEndedBlocks(t *testing.T) {
	evs, rd, err := readAll(t, "id: 3\ndata: a\n\nid: 4\ndata: cut off")
	if !errors.Is(err, io.EOF) || len(evs) != 1 {
		t.Fatalf("got %d events, %v; want 1 and io.EOF", len(evs), err)
	}
	if got, want := rd.LastEventID(), "3"; got != want {
		t.Errorf("LastEventID() = %q, want %q (the id of a block that did not end must not count)", got, want)
	}
	_, rd, _ = readAll(t, "id: 7\n\n")
	if got, want := rd.LastEventID(), "7"; got != want {
		t.Errorf("LastEventID() after a data-less block = %q, want %q", got, want)
	}
}

func TestEventReaderLimits(t *testing.T) {
	t.Run("long line", func(t *testing.T) {
		_, _, err := readAll(t, "data: "+strings.Repeat("x", client.MaxEventLine+1)+"\n\n")
		if !errors.Is(err, client.ErrEventTooLarge) {
			t.Fatalf("err = %v, want ErrEventTooLarge", err)
		}
	})
	t.Run("large event from many lines", func(t *testing.T) {
		line := "data: " + strings.Repeat("y", 64<<10) + "\n"
		n := client.MaxEventData/(64<<10) + 1
		_, _, err := readAll(t, strings.Repeat(line, n)+"\n")
		if !errors.Is(err, client.ErrEventTooLarge) {
			t.Fatalf("err = %v, want ErrEventTooLarge", err)
		}
	})
}

func TestEventDecode(t *testing.T) {
	ev := client.Event{Type: "progress", ID: "3", Data: []byte(`{"progress":42}`)}
	var got struct{ Progress int }
	if err := ev.Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got.Progress != 42 {
		t.Errorf("progress = %d, want 42", got.Progress)
	}
	bad := client.Event{Type: "log", ID: "4", Data: []byte("not json")}
	if err := bad.Decode(&got); err == nil || !strings.Contains(err.Error(), `log event "4"`) {
		t.Errorf("Decode(bad) error = %v, want one naming the event", err)
	}
}

func FuzzEventReader(f *testing.F) {
	f.Add([]byte("event: progress\nid: 2\ndata: {\"progress\":50}\n\n"))
	f.Add([]byte("data: a\r\ndata: b\r\rid: 1\x00\n: c\nretry: 10\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		rd := client.NewEventReader(strings.NewReader(string(b)))
		for i := 0; ; i++ {
			if i > len(b) {
				t.Fatalf("more events (%d) than input bytes (%d)", i, len(b))
			}
			ev, err := rd.Next()
			if err != nil {
				break
			}
			if ev.Type == "" {
				t.Fatal("event without a type")
			}
			if len(ev.Data) > len(b) {
				t.Fatalf("event data %d bytes from %d input bytes", len(ev.Data), len(b))
			}
		}
	})
}

func BenchmarkEventReader(b *testing.B) {
	var sb strings.Builder
	for i := range 100 {
		sb.WriteString("id: " + strconv.Itoa(i) + "\nevent: progress\ndata: {\"task_id\":\"01a22716-69e6-7be9-886f-7347c7966d96\",\"progress\":" + strconv.Itoa(i) + "}\n\n")
	}
	stream := sb.String()
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		rd := client.NewEventReader(strings.NewReader(stream))
		n := 0
		for {
			if _, err := rd.Next(); err != nil {
				break
			}
			n++
		}
		if n != 100 {
			b.Fatalf("read %d events, want 100", n)
		}
	}
}
