package wire

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// envScan reads a JSON envelope from valid UTF-8 in place: the envReader of
// UnmarshalJSON. It accepts exactly what encoding/json's Decoder accepts
// (the same grammar, escapes, lone surrogates read as U+FFFD, nesting at
// most 10000 deep) without its tokens, reflection and copies: decoding an
// envelope was a tenth of the CPU of a batch of them.
type envScan struct {
	b []byte
	i int
	// depth is how many objects of the envelope enclose the reader.
	depth int
}

// envMaxDepth is encoding/json's nesting limit.
const envMaxDepth = 10000

var errEnvEOF = errors.New("unexpected end of JSON input")

func (s *envScan) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek is the next byte after whitespace (0 at the end).
func (s *envScan) peek() byte {
	s.ws()
	if s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

func (s *envScan) syntax(what string) error {
	if s.i >= len(s.b) {
		return errEnvEOF
	}
	return fmt.Errorf("invalid character %q %s", s.b[s.i], what)
}

// end tells whether only whitespace is left.
func (s *envScan) end() bool { return s.peek() == 0 && s.i >= len(s.b) }

// open reads the start of an object (JSON does not say how many keys it
// has).
func (s *envScan) open() (bool, int, error) {
	switch s.peek() {
	case 'n':
		if err := s.literal("null"); err != nil {
			return false, 0, invalidf("%v", err)
		}
		return false, 0, nil
	case '{':
	default:
		if s.i >= len(s.b) {
			return false, 0, invalidf("%v", errEnvEOF)
		}
		return false, 0, invalidf("want an object, found %q", s.b[s.i])
	}
	s.i++
	s.depth++
	return true, -1, nil
}

// next reads key i of the object open began: after the value of key i-1,
// a comma, or the closing brace that ends it.
func (s *envScan) next(i, _ int) (string, bool, error) {
	switch {
	case i == 0:
		if s.peek() == '}' {
			s.i++
			s.depth--
			return "", false, nil
		}
	default: // after a value
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			s.depth--
			return "", false, nil
		default:
			return "", false, invalidf("%v", s.syntax("after object key:value pair"))
		}
	}
	if s.peek() != '"' {
		return "", false, invalidf("%v", s.syntax("looking for beginning of object key string"))
	}
	key, err := s.key()
	if err != nil {
		return "", false, invalidf("%v", err)
	}
	if s.peek() != ':' {
		return "", false, invalidf("%v", s.syntax("after object key"))
	}
	s.i++
	return key, true, nil
}

func (s *envScan) str(p *string) error {
	switch s.peek() {
	case '"':
		v, err := s.quoted()
		if err != nil {
			return err
		}
		*p = v
		return nil
	case 'n':
		return s.literal("null")
	}
	if _, err := s.value(); err != nil {
		return err
	}
	return errors.New("not a string")
}

func (s *envScan) hopCount() (int, error) {
	raw, err := s.value()
	if err != nil {
		return 0, err
	}
	if string(raw) == "null" {
		return 0, nil
	}
	h, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("%s is not an integer", raw)
	}
	return envClampHop(h), nil
}

func (s *envScan) payload() (RawPayload, error) {
	raw, err := s.value()
	if err != nil {
		return RawPayload{}, err
	}
	return RawPayload{codec: PayloadJSON, raw: append([]byte(nil), raw...)}, nil
}

func (s *envScan) skip() error {
	_, err := s.value()
	return err
}

// value checks the next value and returns its bytes (shared with the
// input).
func (s *envScan) value() ([]byte, error) {
	s.ws()
	start := s.i
	if err := s.skipValue(s.depth); err != nil {
		return nil, err
	}
	return s.b[start:s.i], nil
}

// skipValue checks the value at s.i, depth containers deep.
func (s *envScan) skipValue(depth int) error {
	switch c := s.peek(); {
	case c == '{' || c == '[':
		if depth >= envMaxDepth {
			return errors.New("exceeded max depth")
		}
		s.i++
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		if s.peek() == closing {
			s.i++
			return nil
		}
		for {
			if c == '{' {
				if s.peek() != '"' {
					return s.syntax("looking for beginning of object key string")
				}
				if err := s.skipString(); err != nil {
					return err
				}
				if s.peek() != ':' {
					return s.syntax("after object key")
				}
				s.i++
			}
			if err := s.skipValue(depth + 1); err != nil {
				return err
			}
			switch s.peek() {
			case ',':
				s.i++
			case closing:
				s.i++
				return nil
			default:
				if c == '{' {
					return s.syntax("after object key:value pair")
				}
				return s.syntax("after array element")
			}
		}
	case c == '"':
		return s.skipString()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	}
	return s.syntax("looking for beginning of value")
}

func (s *envScan) literal(lit string) error {
	if len(s.b)-s.i < len(lit) {
		if string(s.b[s.i:]) == lit[:len(s.b)-s.i] {
			s.i = len(s.b)
			return errEnvEOF
		}
	} else if string(s.b[s.i:s.i+len(lit)]) == lit {
		s.i += len(lit)
		return nil
	}
	for k := 0; k < len(lit) && s.i < len(s.b) && s.b[s.i] == lit[k]; k++ {
		s.i++
	}
	return s.syntax("in literal " + lit)
}

func (s *envScan) digits() int {
	n := 0
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
		n++
	}
	return n
}

func (s *envScan) number() error {
	if s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i >= len(s.b):
		return errEnvEOF
	case s.b[s.i] == '0':
		s.i++
	case s.b[s.i] >= '1' && s.b[s.i] <= '9':
		s.digits()
	default:
		return s.syntax("in numeric literal")
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if s.digits() == 0 {
			return s.syntax("after decimal point in numeric literal")
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if s.digits() == 0 {
			return s.syntax("in exponent of numeric literal")
		}
	}
	return nil
}

// skipString checks the string at s.i (its opening quote).
func (s *envScan) skipString() error {
	s.i++
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return nil
		case c == '\\':
			if err := s.escape(nil); err != nil {
				return err
			}
		case c < 0x20:
			return s.syntax("in string literal")
		default:
			s.i++
		}
	}
	return errEnvEOF
}

// key reads the object key at s.i (its opening quote) as quoted does; a
// key of the envelope's objects is read as its constant, without making
// a string.
func (s *envScan) key() (string, error) {
	start := s.i + 1
	if n := bytes.IndexByte(s.b[start:], '"'); n >= 0 {
		// A known key holds no backslash or control character, so when
		// the bytes before the first quote spell one, that quote closes it.
		if k, ok := envKnownKey(s.b[start : start+n]); ok {
			s.i = start + n + 1
			return k, nil
		}
	}
	return s.quoted()
}

// envKnownKey is the key of the envelope's objects that b spells.
func envKnownKey(b []byte) (string, bool) {
	for _, keys := range [...][]string{envTopKeys, envAgentKeys, envTraceKeys} {
		for _, k := range keys {
			if string(b) == k {
				return k, true
			}
		}
	}
	return "", false
}

// quoted reads the string at s.i (its opening quote), unescaped.
func (s *envScan) quoted() (string, error) {
	s.i++
	start := s.i
	for s.i < len(s.b) { // the common case: nothing to unescape
		c := s.b[s.i]
		if c == '"' {
			v := string(s.b[start:s.i])
			s.i++
			return v, nil
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			return "", s.syntax("in string literal")
		}
		s.i++
	}
	buf := append([]byte(nil), s.b[start:s.i]...)
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return string(buf), nil
		case c == '\\':
			if err := s.escape(&buf); err != nil {
				return "", err
			}
		case c < 0x20:
			return "", s.syntax("in string literal")
		default:
			buf = append(buf, c)
			s.i++
		}
	}
	return "", errEnvEOF
}

// escape reads the escape at s.i (its backslash), appending what it
// stands for to *buf when buf is not nil. A surrogate that is not the
// first of a pair is U+FFFD, as encoding/json reads it.
func (s *envScan) escape(buf *[]byte) error {
	s.i++
	if s.i >= len(s.b) {
		return errEnvEOF
	}
	c := s.b[s.i]
	var r rune
	switch c {
	case '"', '\\', '/':
		r = rune(c)
	case 'b':
		r = '\b'
	case 'f':
		r = '\f'
	case 'n':
		r = '\n'
	case 'r':
		r = '\r'
	case 't':
		r = '\t'
	case 'u':
		s.i++
		v, ok := s.hex4()
		if !ok {
			return s.syntax("in \\u hexadecimal character escape")
		}
		r = v
		if utf16.IsSurrogate(r) {
			r = unicode.ReplacementChar
			if len(s.b)-s.i >= 6 && s.b[s.i] == '\\' && s.b[s.i+1] == 'u' {
				save := s.i
				s.i += 2
				if v2, ok := s.hex4(); ok {
					if d := utf16.DecodeRune(v, v2); d != unicode.ReplacementChar {
						r = d
					} else {
						s.i = save // the second escape is read on its own
					}
				} else {
					s.i = save
				}
			}
		}
		if buf != nil {
			*buf = utf8.AppendRune(*buf, r)
		}
		return nil
	default:
		return s.syntax("in string escape code")
	}
	s.i++
	if buf != nil {
		*buf = append(*buf, byte(r))
	}
	return nil
}

// hex4 reads four hex digits at s.i.
func (s *envScan) hex4() (rune, bool) {
	if len(s.b)-s.i < 4 {
		for s.i < len(s.b) && isHex(s.b[s.i]) {
			s.i++
		}
		return 0, false
	}
	var r rune
	for k := 0; k < 4; k++ {
		c := s.b[s.i]
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(d)
		s.i++
	}
	return r, true
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// JSONValueEnd checks the JSON value at the start of b (after white space)
// as encoding/json would and returns the offset just past it, for readers
// of documents that hold envelopes (peer batches).
func JSONValueEnd(b []byte) (int, error) {
	s := &envScan{b: b}
	if _, err := s.value(); err != nil {
		return 0, err
	}
	return s.i, nil
}
