package command

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// PrintJSON writes v as indented JSON on standard output.
func (s *Session) PrintJSON(v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode output: %w", err)
	}
	_, err := s.IO.Out.Write(buf.Bytes())
	return err
}

// KV is one "key: value" line, key first; lines with an empty value are
// left out.
type KV [2]string

// PrintKV writes aligned "key: value" lines.
func PrintKV(w io.Writer, rows []KV) {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	for _, r := range rows {
		if r[1] != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", r[0], r[1])
		}
	}
	tw.Flush()
}

// PrettyJSON indents a JSON text; anything else comes back unchanged.
func PrettyJSON(s string) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, []byte(s), "", "  "); err != nil {
		return s
	}
	return buf.String()
}

// Indent prefixes every line of s with pre.
func Indent(s, pre string) string {
	return pre + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+pre)
}

// OrDash is s, or "-" for an empty table cell.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
