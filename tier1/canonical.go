package tier1

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"unicode/utf16"

	"github.com/synapse-edge/synapse/wire"
)

// Hash returns the descriptor hash: "sha256:" followed by the lower-case
// hex SHA-256 of [Descriptor.CanonicalJSON].
func (d *Descriptor) Hash() string {
	sum := sha256.Sum256(d.CanonicalJSON())
	return "sha256:" + hex.EncodeToString(sum[:])
}

// CanonicalJSON returns the form of the descriptor that is hashed: its
// JSON (the struct tags decide the keys; "unit" is left out when empty and
// "optional" when false, every other key is always present and "fields" is
// an array even when empty) re-emitted with keys sorted and no whitespace.
// Strings are written as in RFC 8785: only '"', '\\' and control characters
// are escaped (\b \f \n \r \t, others as \u00xx in lower-case hex);
// everything else, '<', '>', '&' and non-ASCII included, is written as
// UTF-8. Invalid UTF-8 becomes U+FFFD (Validate refuses it).
func (d *Descriptor) CanonicalJSON() []byte {
	c := *d
	if c.Fields == nil {
		c.Fields = []Field{}
	}
	b, err := canonicalJSON(c)
	if err != nil {
		// A Descriptor is strings and bools: encoding/json cannot fail on it.
		panic(fmt.Sprintf("tier1: canonical JSON of a descriptor: %v", err))
	}
	return b
}

// canonicalJSON marshals v with encoding/json, decodes the result into
// generic values and writes them back in canonical form.
func canonicalJSON(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return nil, err
	}
	return appendCanonical(nil, x)
}

func appendCanonical(dst []byte, x any) ([]byte, error) {
	var err error
	switch v := x.(type) {
	case nil:
		dst = append(dst, "null"...)
	case bool:
		if v {
			dst = append(dst, "true"...)
		} else {
			dst = append(dst, "false"...)
		}
	case json.Number:
		// encoding/json writes integers in their shortest form; descriptors
		// hold no numbers today.
		dst = append(dst, v...)
	case string:
		dst = wire.AppendCanonicalJSONString(dst, v)
	case []any:
		dst = append(dst, '[')
		for i, e := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = appendCanonical(dst, e); err != nil {
				return nil, err
			}
		}
		dst = append(dst, ']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		// RFC 8785 orders keys by UTF-16 code units; for ASCII keys that is
		// byte order.
		slices.SortFunc(keys, func(a, b string) int {
			return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
		})
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = wire.AppendCanonicalJSONString(dst, k)
			dst = append(dst, ':')
			if dst, err = appendCanonical(dst, v[k]); err != nil {
				return nil, err
			}
		}
		dst = append(dst, '}')
	default:
		return nil, fmt.Errorf("canonical json: unexpected %T", x)
	}
	return dst, nil
}
