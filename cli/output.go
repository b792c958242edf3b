package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/synapse-edge/synapse/client"
)

// printJSON writes v as indented JSON.
func (s *session) printJSON(v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode output: %w", err)
	}
	_, err := s.io.Out.Write(buf.Bytes())
	return err
}

// kv is one "key: value" line; empty values are left out.
type kv struct{ k, v string }

// printKV writes aligned "key: value" lines.
func printKV(w io.Writer, rows []kv) {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	for _, r := range rows {
		if r.v != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", r.k, r.v)
		}
	}
	tw.Flush()
}

// prettyJSON indents a JSON text; anything else comes back unchanged.
func prettyJSON(s string) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, []byte(s), "", "  "); err != nil {
		return s
	}
	return buf.String()
}

// indent prefixes every line of s with pre.
func indent(s, pre string) string {
	return pre + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+pre)
}

// printTask writes one task as "key: value" lines, then its result
// (pretty-printed JSON), missing fields and history.
func printTask(w io.Writer, t *client.TaskStatus) {
	progress := fmt.Sprintf("%d%%", t.Progress)
	errText := t.ErrorMessage
	if t.ErrorCode != "" {
		errText = strings.TrimSuffix(t.ErrorCode+": "+t.ErrorMessage, ": ")
	}
	printKV(w, []kv{
		{"task_id", t.TaskID},
		{"task_type", t.TaskType},
		{"status", t.Status},
		{"progress", progress},
		{"target", t.Target},
		{"created_at", t.CreatedAt},
		{"updated_at", t.UpdatedAt},
		{"etag", t.ETag},
		{"error", errText},
	})
	if t.ResultJSON != "" {
		fmt.Fprintf(w, "result:\n%s\n", indent(prettyJSON(t.ResultJSON), "  "))
	}
	if len(t.MissingFields) > 0 {
		fmt.Fprintln(w, "missing_fields:")
		for _, f := range t.MissingFields {
			fmt.Fprintf(w, "  %s\n", strings.TrimSuffix(f.Field+": "+f.Reason, ": "))
		}
	}
	if len(t.History) > 0 {
		fmt.Fprintln(w, "history:")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, h := range t.History {
			// Every line has the same cells, so that the columns align.
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", h.At, h.Status, h.Reason)
		}
		tw.Flush()
	}
}

// printTaskTable writes tasks as an aligned table.
func printTaskTable(w io.Writer, tasks []client.TaskStatus) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK ID\tTYPE\tSTATUS\tPROGRESS\tUPDATED")
	for _, t := range tasks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d%%\t%s\n", t.TaskID, t.TaskType, t.Status, t.Progress, t.UpdatedAt)
	}
	tw.Flush()
}
