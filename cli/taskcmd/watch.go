package taskcmd

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/synapse-edge/synapse/cli/command"
	"github.com/synapse-edge/synapse/client"
)

// barWidth is the number of cells of the progress bar.
const barWidth = 20

func taskWatchVerb() *command.Verb {
	return &command.Verb{
		Name: "task watch", Args: "TASK_ID", MinArgs: 1, MaxArgs: 1,
		Summary: "follow a task live until it ends (exit code 0 only if it completed)",
		About: `Follows the task's event stream. A progress bar is redrawn in place on one
line (with carriage returns); log lines and errors are printed above it. When
the task ends the bar is finished with a newline and the result (completed)
or the error (any other end) is printed. A dropped connection is resumed
where it stopped. --plain (the default when standard output is not a
terminal) prints one line per change instead of redrawing;
--json prints each event as one JSON object per line.`,
		Agent: true, Timeout: 0,
		Examples: []string{
			"synapse task watch TASK_ID",
			"synapse task watch TASK_ID --plain > watch.log",
			"synapse task watch TASK_ID --json | jq -c .",
		},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			plain := fs.Bool("plain", false, "print one line per change instead of redrawing the bar")
			from := fs.String("from", "", "resume after this event `ID` (the SSE Last-Event-ID)")
			return func(ctx context.Context, args []string) error {
				return watchTask(ctx, s, args[0], *from, *plain)
			}
		},
	}
}

// watchTask follows the stream of task id and returns the task's outcome.
func watchTask(ctx context.Context, s *command.Session, id, from string, plain bool) error {
	c := s.Client()
	ctx, cancel := s.WithTimeout(ctx)
	defer cancel()
	get := func(fetch func(context.Context, string) (*client.TaskStatus, error)) (*client.TaskStatus, error) {
		rctx, cancel := context.WithTimeout(ctx, command.DefaultRequestTimeout)
		defer cancel()
		return fetch(rctx, id)
	}
	// The stream replays the task's events from the start (or after
	// --from), so the view is drawn from events only; this request just
	// reports an unknown task or a refused token plainly.
	if _, err := get(c.GetTaskStatus); err != nil {
		return err
	}
	// Off a terminal (a pipe, a file, a CI log) the bar is not redrawn.
	view := &progressView{w: s.IO.Out, plain: plain || !s.Terminal(s.IO.Out)}
	err := c.StreamTask(ctx, id, from, func(ev client.Event) error {
		if s.Flags.JSON {
			return printEventLine(s.IO.Out, ev)
		}
		view.handle(ev)
		return nil
	})
	view.end()
	if err != nil {
		return err
	}
	final, err := get(c.GetTask)
	if err != nil {
		return err
	}
	if !s.Flags.JSON && final.Status == "completed" && final.ResultJSON != "" {
		fmt.Fprintf(s.IO.Out, "result:\n%s\n", command.Indent(command.PrettyJSON(final.ResultJSON), "  "))
	}
	return taskOutcome(final)
}

// printEventLine writes an event as {"event","id","data"} on one line; data
// that is not JSON is written as a string.
func printEventLine(w io.Writer, ev client.Event) error {
	data := json.RawMessage(ev.Data)
	if !json.Valid(data) {
		b, _ := json.Marshal(string(ev.Data))
		data = b
	}
	b, err := json.Marshal(struct {
		Event string          `json:"event"`
		ID    string          `json:"id,omitempty"`
		Data  json.RawMessage `json:"data"`
	}{ev.Type, ev.ID, data})
	if err != nil {
		return fmt.Errorf("encode event: %w", err)
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// eventData holds the fields the watch view reads from event data. The
// agent's events are JSON objects: status_update and complete carry the
// task's status (and progress), progress carries progress, log a line
// (line, message or text), error a TPError object (code, message).
type eventData struct {
	Status       string   `json:"status"`
	Progress     *float64 `json:"progress"`
	Line         string   `json:"line"`
	Message      string   `json:"message"`
	Text         string   `json:"text"`
	Code         string   `json:"code"`
	ErrorCode    string   `json:"error_code"`
	ErrorMessage string   `json:"error_message"`
}

// progressView draws a task's progress: one line redrawn in place, or in
// plain mode one line per change.
type progressView struct {
	w        io.Writer
	plain    bool
	status   string
	progress int
	note     string // message of the last progress event in this state
	drawn    int    // width of the bar line now on screen (bar mode)
	shown    string // the last bar line written
}

// handle updates the view from one event.
func (v *progressView) handle(ev client.Event) {
	var d eventData
	isJSON := json.Unmarshal(ev.Data, &d) == nil
	switch ev.Type {
	case "status_update", "progress", "complete":
		if d.Status != "" && d.Status != v.status {
			v.note = ""
		}
		if ev.Type == "progress" && d.Message != "" {
			v.note = d.Message
		}
		status, progress := v.status, v.progress
		if d.Status != "" {
			status = d.Status
		}
		if d.Progress != nil {
			progress = int(*d.Progress)
		}
		v.set(status, progress)
	case "log":
		text := firstNonEmpty(d.Line, d.Message, d.Text)
		if !isJSON || text == "" {
			text = string(ev.Data)
		}
		v.println(text)
	case "error":
		code := firstNonEmpty(d.Code, d.ErrorCode)
		msg := firstNonEmpty(d.Message, d.ErrorMessage)
		if !isJSON || (code == "" && msg == "") {
			msg = string(ev.Data)
		}
		v.println("error: " + strings.TrimPrefix(code+": "+msg, ": "))
	}
}

// set records status and progress and redraws the bar when it changed.
func (v *progressView) set(status string, progress int) {
	v.status, v.progress = status, progress
	line := renderBar(status, progress)
	if v.note != "" {
		line += " (" + v.note + ")"
	}
	if line == v.shown {
		return
	}
	v.shown = line
	if v.plain {
		fmt.Fprintln(v.w, line)
		return
	}
	pad := max(v.drawn-len(line), 0)
	fmt.Fprintf(v.w, "\r%s%s", line, strings.Repeat(" ", pad))
	v.drawn = len(line)
}

// println prints a line above the bar and redraws the bar under it.
func (v *progressView) println(text string) {
	text = strings.TrimRight(text, "\r\n")
	if v.plain || v.drawn == 0 {
		fmt.Fprintln(v.w, text)
		return
	}
	fmt.Fprintf(v.w, "\r%s\r%s\n%s", strings.Repeat(" ", v.drawn), text, v.shown)
}

// end finishes the bar line.
func (v *progressView) end() {
	if !v.plain && v.drawn > 0 {
		fmt.Fprintln(v.w)
		v.drawn = 0
	}
}

// renderBar draws "[#####     ] 50% executing"; a completed task is full.
func renderBar(status string, progress int) string {
	if status == "completed" {
		progress = 100
	}
	progress = min(max(progress, 0), 100)
	filled := progress * barWidth / 100
	return fmt.Sprintf("[%s%s] %d%% %s", strings.Repeat("#", filled), strings.Repeat(" ", barWidth-filled), progress, status)
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
