package taskcmd

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/synapse-edge/synapse/cli/command"
	"github.com/synapse-edge/synapse/client"
)

// printTask writes one task as "key: value" lines, then its result
// (pretty-printed JSON), missing fields and history.
func printTask(w io.Writer, t *client.TaskStatus) {
	progress := fmt.Sprintf("%d%%", t.Progress)
	errText := t.ErrorMessage
	if t.ErrorCode != "" {
		errText = strings.TrimSuffix(t.ErrorCode+": "+t.ErrorMessage, ": ")
	}
	command.PrintKV(w, []command.KV{
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
		fmt.Fprintf(w, "result:\n%s\n", command.Indent(command.PrettyJSON(t.ResultJSON), "  "))
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
