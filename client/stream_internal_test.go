package client

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// scriptedDial returns a dialFunc that serves the given streams in turn
// (a nil entry fails the dial with err) and records the Last-Event-ID
// each dial asked for.
func scriptedDial(t *testing.T, streams []*string, err error) (dialFunc, *[]string) {
	t.Helper()
	var asked []string
	return func(ctx context.Context, last string) (io.ReadCloser, error) {
		asked = append(asked, last)
		i := len(asked) - 1
		if i >= len(streams) {
			return io.NopCloser(strings.NewReader("")), nil
		}
		if streams[i] == nil {
			return nil, err
		}
		return io.NopCloser(strings.NewReader(*streams[i])), nil
	}, &asked
}

func ptr(s string) *string { return &s }

func TestStreamLoopResumesWithLastEventID(t *testing.T) {
	c := New("http://127.0.0.1:1", "", WithStreamRetries(3, time.Millisecond))
	dial, asked := scriptedDial(t, []*string{
		ptr("event: status_update\nid: 1\ndata: {}\n\nevent: progress\nid: 2\ndata: {}\n\nevent: progress\nid: 3\ndata: {\"partial"), // drops mid-event
		nil, // connection refused once
		ptr("event: progress\nid: 3\ndata: {}\n\nevent: complete\nid: 4\ndata: {}\n\nevent: log\nid: 5\ndata: {}\n\n"),
	}, &APIError{Status: 503, Code: "agent_not_ready", Retriable: true})
	var got []string
	err := c.streamLoop(context.Background(), "", dial, func(ev Event) error {
		got = append(got, ev.Type+"#"+ev.ID)
		return nil
	})
	if err != nil {
		t.Fatalf("streamLoop: %v", err)
	}
	if want := "status_update#1 progress#2 progress#3 complete#4"; strings.Join(got, " ") != want {
		t.Errorf("events = %q, want %q", strings.Join(got, " "), want)
	}
	if want := []string{"", "2", "2"}; strings.Join(*asked, ",") != strings.Join(want, ",") {
		t.Errorf("Last-Event-ID per dial = %q, want %q", *asked, want)
	}
}

func TestStreamLoopStartsFromGivenID(t *testing.T) {
	c := New("http://127.0.0.1:1", "")
	dial, asked := scriptedDial(t, []*string{ptr("event: complete\nid: 8\ndata: {}\n\n")}, nil)
	if err := c.streamLoop(context.Background(), "7", dial, func(Event) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if got := *asked; len(got) != 1 || got[0] != "7" {
		t.Errorf("Last-Event-ID per dial = %q, want [7]", got)
	}
}

func TestStreamLoopGivesUp(t *testing.T) {
	c := New("http://127.0.0.1:1", "", WithStreamRetries(2, time.Millisecond))
	dial, asked := scriptedDial(t, nil, nil) // every connection ends at once
	err := c.streamLoop(context.Background(), "", dial, func(Event) error { return nil })
	if !errors.Is(err, ErrStreamIncomplete) {
		t.Fatalf("err = %v, want ErrStreamIncomplete", err)
	}
	if got, want := len(*asked), 3; got != want {
		t.Errorf("dials = %d, want %d (1 + 2 retries)", got, want)
	}
}

func TestStreamLoopPermanentError(t *testing.T) {
	c := New("http://127.0.0.1:1", "", WithStreamRetries(5, time.Millisecond))
	notFound := &APIError{Status: 404, Code: "task_not_found"}
	dial, asked := scriptedDial(t, []*string{nil}, notFound)
	err := c.streamLoop(context.Background(), "", dial, func(Event) error { return nil })
	if !errors.Is(err, notFound) {
		t.Fatalf("err = %v, want task_not_found", err)
	}
	if got := len(*asked); got != 1 {
		t.Errorf("dials = %d, want 1", got)
	}
}

func TestStreamLoopCallbackErrors(t *testing.T) {
	stream := "event: progress\nid: 1\ndata: {}\n\nevent: progress\nid: 2\ndata: {}\n\n"
	t.Run("stop", func(t *testing.T) {
		c := New("http://127.0.0.1:1", "")
		dial, _ := scriptedDial(t, []*string{ptr(stream)}, nil)
		n := 0
		err := c.streamLoop(context.Background(), "", dial, func(Event) error { n++; return ErrStopStream })
		if err != nil || n != 1 {
			t.Errorf("err = %v after %d events, want nil after 1", err, n)
		}
	})
	t.Run("other", func(t *testing.T) {
		c := New("http://127.0.0.1:1", "")
		dial, _ := scriptedDial(t, []*string{ptr(stream)}, nil)
		boom := errors.New("boom")
		err := c.streamLoop(context.Background(), "", dial, func(Event) error { return boom })
		if !errors.Is(err, boom) {
			t.Errorf("err = %v, want boom", err)
		}
	})
}

func TestStreamLoopContextCancel(t *testing.T) {
	c := New("http://127.0.0.1:1", "", WithStreamRetries(100, time.Hour))
	ctx, cancel := context.WithCancel(context.Background())
	dial := func(ctx context.Context, last string) (io.ReadCloser, error) {
		cancel()
		return io.NopCloser(strings.NewReader("")), nil
	}
	err := c.streamLoop(ctx, "", dial, func(Event) error { return nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}
