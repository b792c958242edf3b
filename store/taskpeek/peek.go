package taskpeek

import "bytes"

var key = []byte(`"status":"`)

// Status returns the top-level "status" string of the JSON object raw
// when it can tell it for certain (see the package doc): a state's name
// (lower-case letters and '_'). raw must not repeat the key at its top
// level (a decoder takes the last value): the store's encoders write
// each key once.
func Status(raw []byte) (string, bool) {
	if len(raw) == 0 || raw[0] != '{' {
		return "", false
	}
	i := bytes.Index(raw, key)
	if i < 1 {
		return "", false
	}
	// Before it only strings and scalars: a key inside a nested value
	// would need a '{' or '[' there (a quote inside a string is
	// escaped, so the key cannot be inside one).
	pre := raw[1:i]
	if bytes.ContainsAny(pre, "{[") || (len(pre) > 0 && pre[len(pre)-1] != ',') {
		return "", false
	}
	v := raw[i+len(key):]
	end := bytes.IndexByte(v, '"')
	if end <= 0 {
		return "", false
	}
	for _, c := range v[:end] {
		if (c < 'a' || c > 'z') && c != '_' {
			return "", false // not a state's name
		}
	}
	return string(v[:end]), true
}
