package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"unicode/utf8"

	"github.com/vmihailenco/msgpack/v5"
)

// Content types of the two codecs.
const (
	ContentJSON    = "application/json"
	ContentMsgpack = "application/msgpack"
)

// Codec encodes and decodes API bodies in one content type.
type Codec interface {
	ContentType() string
	Marshal(v any) ([]byte, error)
	Unmarshal(b []byte, v any) error
}

// JSON is the default codec.
var JSON Codec = jsonCodec{}

// Msgpack is the binary codec with the same field names.
var Msgpack Codec = msgpackCodec{}

type jsonCodec struct{}

func (jsonCodec) ContentType() string { return ContentJSON }

// Marshal encodes v without HTML escaping: "<token>" stays "<token>",
// not "\u003ctoken\u003e" (answers are read by people and tools, never
// pasted into HTML).
func (jsonCodec) Marshal(v any) ([]byte, error) {
	if r, ok := v.(*TaskStatusResponse); ok && r != nil {
		return AppendStatusJSON(nil, r, false) // the task answer, without reflection
	}
	buf := jsonBufs.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= 64<<10 {
			buf.Reset()
			jsonBufs.Put(buf)
		}
	}()
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return append([]byte(nil), b[:len(b)-1]...), nil // without Encode's newline
}

var jsonBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// Unmarshal decodes one JSON value and refuses trailing data.
func (jsonCodec) Unmarshal(b []byte, v any) error {
	if err := CheckUTF8(b); err != nil {
		return err
	}
	if json.Unmarshal(b, v) == nil {
		return nil // one value, nothing after it but white space
	}
	// The decoder again, for its errors (a truncated body, trailing data).
	d := json.NewDecoder(bytes.NewReader(b))
	if err := d.Decode(v); err != nil {
		return describeJSONError(err)
	}
	if d.More() {
		return fmt.Errorf("trailing data after the JSON value")
	}
	return nil
}

// CheckUTF8 refuses JSON text that is not valid UTF-8 (RFC 8259 §8.1):
// encoding/json would keep such bytes in a json.RawMessage as they are.
func CheckUTF8(b []byte) error {
	if utf8.Valid(b) {
		return nil
	}
	i := 0
	for i < len(b) {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			break
		}
		i += n
	}
	return fmt.Errorf("%w: JSON text at byte %d", ErrInvalidUTF8, i)
}

func describeJSONError(err error) error {
	switch e := err.(type) {
	case *json.SyntaxError:
		return fmt.Errorf("invalid JSON at byte %d: %v", e.Offset, e)
	case *json.UnmarshalTypeError:
		return fmt.Errorf("field %q: expected %s, found JSON %s", e.Field, e.Type, e.Value)
	}
	return err
}

type msgpackCodec struct{}

func (msgpackCodec) ContentType() string { return ContentMsgpack }

func (msgpackCodec) Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.SetCustomStructTag("msgpack")
	enc.UseCompactInts(true)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Unmarshal checks the bytes with CheckMsgpack first, so hostile length
// prefixes are refused before the decoder allocates for them.
func (msgpackCodec) Unmarshal(b []byte, v any) error {
	if err := CheckMsgpack(b, DefaultMsgpackLimits); err != nil {
		return err
	}
	if err := msgpack.Unmarshal(b, v); err != nil {
		return fmt.Errorf("msgpack: %w", err)
	}
	return nil
}

// CodecFor returns the codec of a Content-Type or Accept value: msgpack for
// application/msgpack (or application/x-msgpack, application/vnd.msgpack),
// JSON for everything else.
func CodecFor(contentType string) Codec {
	if IsMsgpack(contentType) {
		return Msgpack
	}
	return JSON
}

// IsMsgpack reports whether a media type names msgpack.
func IsMsgpack(ct string) bool {
	for _, m := range []string{"application/msgpack", "application/x-msgpack", "application/vnd.msgpack"} {
		if len(ct) >= len(m) && bytes.EqualFold([]byte(ct[:len(m)]), []byte(m)) {
			return true
		}
	}
	return false
}
