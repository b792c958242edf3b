package taskcmd

import (
	"bytes"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/client"
)

func TestRenderBar(t *testing.T) {
	tests := []struct {
		status   string
		progress int
		want     string
	}{
		{"pending", 0, "[                    ] 0% pending"},
		{"executing", 50, "[##########          ] 50% executing"},
		{"executing", 99, "[################### ] 99% executing"},
		{"executing", 250, "[####################] 100% executing"},
		{"executing", -3, "[                    ] 0% executing"},
		{"completed", 10, "[####################] 100% completed"},
		{"failed", 30, "[######              ] 30% failed"},
	}
	for _, tt := range tests {
		if got := renderBar(tt.status, tt.progress); got != tt.want {
			t.Errorf("renderBar(%q, %d) = %q, want %q", tt.status, tt.progress, got, tt.want)
		}
	}
}

func ev(typ, data string) client.Event { return client.Event{Type: typ, Data: []byte(data)} }

func TestProgressViewRedrawsInPlace(t *testing.T) {
	var buf bytes.Buffer
	v := &progressView{w: &buf}
	for _, e := range []client.Event{
		ev("status_update", `{"status":"executing","progress":0}`),
		ev("progress", `{"progress":50,"message":"half way"}`),
		ev("progress", `{"progress":50,"message":"half way"}`), // no change, no redraw
		ev("log", `{"line":"resized 3 images"}`),
		ev("log", `plain text`),
		ev("error", `{"code":"execution_failed","message":"disk full"}`),
		ev("status_update", `{"status":"failed","progress":50}`),
		ev("complete", `{"status":"failed","progress":50}`),
	} {
		v.handle(e)
	}
	v.end()
	bar0 := "[                    ] 0% executing"
	bar50 := "[##########          ] 50% executing (half way)"
	blank := "\r" + strings.Repeat(" ", len(bar50)) + "\r"
	want := "\r" + bar0 +
		"\r" + bar50 +
		blank + "resized 3 images\n" + bar50 +
		blank + "plain text\n" + bar50 +
		blank + "error: execution_failed: disk full\n" + bar50 +
		"\r[##########          ] 50% failed" + strings.Repeat(" ", len(bar50)-len("[##########          ] 50% failed")) +
		"\n"
	if got := buf.String(); got != want {
		t.Errorf("output\n%q\nwant\n%q", got, want)
	}
}

func TestProgressViewPlain(t *testing.T) {
	var buf bytes.Buffer
	v := &progressView{w: &buf, plain: true}
	for _, e := range []client.Event{
		ev("status_update", `{"status":"pending","progress":0}`),
		ev("status_update", `{"status":"executing","progress":0}`),
		ev("log", `{"message":"starting"}`),
		ev("progress", `{"progress":40}`),
		ev("complete", `{"status":"completed","progress":40}`),
	} {
		v.handle(e)
	}
	v.end()
	want := "[                    ] 0% pending\n" +
		"[                    ] 0% executing\n" +
		"starting\n" +
		"[########            ] 40% executing\n" +
		"[####################] 100% completed\n"
	if got := buf.String(); got != want {
		t.Errorf("output\n%q\nwant\n%q", got, want)
	}
}

func TestPrintEventLine(t *testing.T) {
	var buf bytes.Buffer
	if err := printEventLine(&buf, client.Event{Type: "progress", ID: "3", Data: []byte(`{"progress":5}`)}); err != nil {
		t.Fatal(err)
	}
	if err := printEventLine(&buf, client.Event{Type: "log", Data: []byte("not json")}); err != nil {
		t.Fatal(err)
	}
	want := `{"event":"progress","id":"3","data":{"progress":5}}` + "\n" + `{"event":"log","data":"not json"}` + "\n"
	if got := buf.String(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
