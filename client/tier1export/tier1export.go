// Package tier1export writes the tier-1 frames an agent's API returns (one
// JSON object per frame) as JSON Lines or as CSV rows with the routine's
// field names as columns: what `synapse tier1 export` writes to a file.
package tier1export

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"unicode/utf8"
)

// Writer writes frames as JSON Lines or CSV rows.
type Writer struct {
	w           io.Writer
	csv         *csv.Writer
	names       []string       // CSV columns: the routine's field names
	index       map[string]int // column of each name
	row         []string
	wroteHeader bool
}

// NewWriter returns a Writer of format "csv" (the columns are names, the
// routine's field names, in order) or any other format as JSON Lines.
func NewWriter(w io.Writer, format string, names []string) *Writer {
	fw := &Writer{w: w}
	if format == "csv" {
		fw.csv = csv.NewWriter(w)
		fw.names = names
		fw.row = make([]string, len(names))
		fw.index = make(map[string]int, len(names))
		for i, n := range names {
			fw.index[n] = i
		}
	}
	return fw
}

// Write writes one frame, a JSON object as the agent returns it.
func (fw *Writer) Write(frame json.RawMessage) error {
	if fw.csv == nil {
		if _, err := fw.w.Write(frame); err != nil {
			return fmt.Errorf("write frame: %w", err)
		}
		if _, err := io.WriteString(fw.w, "\n"); err != nil {
			return fmt.Errorf("write frame: %w", err)
		}
		return nil
	}
	if err := fw.header(); err != nil {
		return err
	}
	clear(fw.row)
	if !scanFlatObject(frame, func(key, val []byte) {
		if i, ok := fw.index[jsonText(key)]; ok {
			fw.row[i] = csvValue(val)
		}
	}) {
		// Not a flat object: take the slow, general way.
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(frame, &obj); err != nil {
			return fmt.Errorf("decode frame %.200s: %w", frame, err)
		}
		for i, name := range fw.names {
			fw.row[i] = csvValue(obj[name])
		}
	}
	if err := fw.csv.Write(fw.row); err != nil {
		return fmt.Errorf("write CSV row: %w", err)
	}
	return nil
}

// header writes the CSV header once.
func (fw *Writer) header() error {
	if fw.wroteHeader {
		return nil
	}
	fw.wroteHeader = true
	if err := fw.csv.Write(fw.names); err != nil {
		return fmt.Errorf("write CSV header: %w", err)
	}
	return nil
}

// Flush writes the header of an empty CSV export and flushes the CSV
// writer (not w).
func (fw *Writer) Flush() error {
	if fw.csv == nil {
		return nil
	}
	if err := fw.header(); err != nil {
		return err
	}
	fw.csv.Flush()
	if err := fw.csv.Error(); err != nil {
		return fmt.Errorf("write CSV: %w", err)
	}
	return nil
}

// csvValue renders one JSON value of a frame as a CSV cell: a string's
// text, a number or boolean as written, and "" for a missing value or null.
func csvValue(raw []byte) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if raw[0] == '"' {
		return jsonText(raw)
	}
	return string(raw)
}

// jsonText returns the text of a JSON string (quotes included in raw),
// as encoding/json decodes it.
func jsonText(raw []byte) string {
	if len(raw) >= 2 && bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw[1 : len(raw)-1])
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return string(raw)
	}
	return s
}

// scanFlatObject calls fn with the raw key (quoted) and value of each
// member of a JSON object whose values are all strings, numbers, booleans
// or null; it returns false, maybe after some calls, for any other input.
// b must be valid JSON (a frame the JSON decoder has checked); the scan
// only finds where the members start and end.
func scanFlatObject(b []byte, fn func(key, val []byte)) bool {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return skipSpace(b, i+1) == len(b)
	}
	for i < len(b) && b[i] == '"' {
		kend := stringEnd(b, i)
		if kend < 0 {
			return false
		}
		j := skipSpace(b, kend)
		if j >= len(b) || b[j] != ':' {
			return false
		}
		v := skipSpace(b, j+1)
		if v >= len(b) {
			return false
		}
		vend := v
		switch b[v] {
		case '"':
			vend = stringEnd(b, v)
		case '{', '[':
			return false
		default:
			for vend < len(b) && !isSpace(b[vend]) && b[vend] != ',' && b[vend] != '}' {
				vend++
			}
		}
		if vend <= v {
			return false
		}
		fn(b[i:kend], b[v:vend])
		i = skipSpace(b, vend)
		switch {
		case i < len(b) && b[i] == '}':
			return skipSpace(b, i+1) == len(b)
		case i < len(b) && b[i] == ',':
			i = skipSpace(b, i+1)
		default:
			return false
		}
	}
	return false
}

// stringEnd returns the index after the closing quote of the JSON string
// that opens at b[i], or -1.
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }
