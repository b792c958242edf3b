// Package rawjson tells when encoding/json leaves an encoded JSON value
// as it is: the check that lets a writer copy a value encoding/json would
// otherwise compact and escape, byte for byte as encoding/json writes it.
package rawjson

// AsIs reports whether encoding/json writes the JSON value v as
// it is when it marshals it as a json.RawMessage (compacted, HTML
// escaped): no white space between its tokens and nothing it escapes (<,
// >, &, and U+2028 and U+2029, whose encodings begin with 0xe2). A space
// inside a string stays as it is. It does not validate v; a false "no"
// only costs the caller a Marshal.
func AsIs(v []byte) bool {
	in := false // inside a string
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '\t', '\n', '\r', 0xe2, '<', '>', '&':
			return false
		case ' ':
			if !in {
				return false
			}
		case '"':
			in = !in
		case '\\':
			if in && i+1 < len(v) && (v[i+1] == '"' || v[i+1] == '\\') {
				i++ // an escaped quote or backslash
			}
		}
	}
	return !in
}
