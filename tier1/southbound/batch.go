package southbound

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/synapse-edge/synapse/tier1"
	"github.com/synapse-edge/synapse/wire"
)

// MaxPayload is the largest message Batch maps; larger ones are refused
// unread. One reading is a few dozen bytes.
const MaxPayload = 64 << 10

// ErrBadMessage wraps every reason Batch refuses a message.
var ErrBadMessage = errors.New("bad message")

// mpLimits bound the msgpack reader on device input.
var mpLimits = wire.MsgpackLimits{MaxDepth: 16, MaxLen: 4096}

// Batch appends to dst the tier-1 batch of one message received on topic
// (which matched the route's filter): one frame, its batch_id BatchID(topic,
// payload). A message that cannot be mapped (oversized, neither JSON nor
// msgpack, a missing field, a value of the wrong type) is refused with an
// error wrapping ErrBadMessage that names the field.
func (m *Mapping) Batch(dst []byte, topic string, payload []byte) ([]byte, error) {
	if len(payload) > MaxPayload {
		return dst, fmt.Errorf("%w: %d bytes, more than %d", ErrBadMessage, len(payload), MaxPayload)
	}
	var levels []string
	frame := make(tier1.Frame, len(m.fields))
	var keyed []tier1.Value
	var whole tier1.Value
	if m.payload {
		var err error
		if keyed, whole, err = m.decode(payload); err != nil {
			return dst, fmt.Errorf("%w: %v", ErrBadMessage, err)
		}
	}
	for i, f := range m.fields {
		var v tier1.Value
		switch f.src {
		case fromLiteral:
			v = f.lit
		case fromSegment:
			if levels == nil {
				levels = strings.Split(topic, "/")
			}
			if f.n >= len(levels) {
				return dst, fmt.Errorf("%w: topic %q does not match %q", ErrBadMessage, topic, m.route.Topic)
			}
			var err error
			if v, err = fromString(levels[f.n], f.typ, true); err != nil {
				return dst, fmt.Errorf("%w: %s: topic level: %v", ErrBadMessage, f.name, err)
			}
		case fromKey:
			j, _ := slicesIndex(m.keys, f.key)
			v = keyed[j]
		case fromWhole:
			v = whole
		}
		if v.IsNull() && !f.opt {
			return dst, fmt.Errorf("%w: %s: missing (required by %s)", ErrBadMessage, f.name, m.desc.CapabilityID)
		}
		frame[i] = v
	}
	for len(frame) > 0 && frame[len(frame)-1].IsNull() {
		frame = frame[:len(frame)-1]
	}
	return tier1.AppendBatch(dst, m.desc.CapabilityID, m.desc.Version, BatchID(topic, payload), []tier1.Frame{frame}, m.desc), nil
}

// BatchID is the batch_id of a message: "m" and the first 128 bits of
// SHA-256 over the topic, a zero byte and the payload, in hex. A QoS 1
// redelivery (the broker's, or a publisher's resend after a lost PUBACK)
// carries the same topic and payload, so it is stored once; two readings
// are told apart only by their content (a device's seq or ts), which is
// what identifies a reading on a broker that gives messages no id.
func BatchID(topic string, payload []byte) string {
	h := sha256.New()
	h.Write([]byte(topic))
	h.Write([]byte{0})
	h.Write(payload)
	var sum [sha256.Size]byte
	return "m" + hex.EncodeToString(h.Sum(sum[:0])[:16])
}

func slicesIndex(s []string, k string) (int, bool) {
	for i, x := range s {
		if x == k {
			return i, true
		}
	}
	return -1, false
}

// decode reads the payload keys of m (values by position in m.keys) or
// the whole payload, converted to their fields' types.
func (m *Mapping) decode(p []byte) (keyed []tier1.Value, whole tier1.Value, err error) {
	keyed = make([]tier1.Value, len(m.keys))
	if json.Valid(p) {
		return m.decodeJSON(p, keyed)
	}
	return m.decodeMsgpack(p, keyed)
}

// fieldOf returns the field that reads payload key k (or the whole
// payload when k is ""); the first one when several do.
func (m *Mapping) fieldOf(k string, whole bool) *fieldMap {
	for i := range m.fields {
		f := &m.fields[i]
		if whole && f.src == fromWhole || !whole && f.src == fromKey && f.key == k {
			return f
		}
	}
	return nil
}

func (m *Mapping) decodeJSON(p []byte, keyed []tier1.Value) ([]tier1.Value, tier1.Value, error) {
	var whole tier1.Value
	if f := m.fieldOf("", true); f != nil {
		v, err := jsonScalar(p, f.typ)
		if err != nil {
			return nil, whole, fmt.Errorf("%s: payload: %v", f.name, err)
		}
		whole = v
	}
	if len(m.keys) == 0 {
		return keyed, whole, nil
	}
	if t := bytes.TrimLeft(p, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return nil, whole, errors.New("payload: want a JSON object")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(p, &obj); err != nil {
		return nil, whole, fmt.Errorf("payload: %v", err)
	}
	for i, k := range m.keys {
		raw, ok := obj[k]
		if !ok {
			continue
		}
		f := m.fieldOf(k, false)
		v, err := jsonScalar(raw, f.typ)
		if err != nil {
			return nil, whole, fmt.Errorf("%s: $.%s: %v", f.name, k, err)
		}
		keyed[i] = v
	}
	return keyed, whole, nil
}

func jsonScalar(raw []byte, t tier1.FieldType) (tier1.Value, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return tier1.Value{}, err
	}
	return fromJSON(v, t)
}

func (m *Mapping) decodeMsgpack(p []byte, keyed []tier1.Value) ([]tier1.Value, tier1.Value, error) {
	r := wire.NewMsgpackReader(p, mpLimits)
	var whole tier1.Value
	if f := m.fieldOf("", true); f != nil {
		v, err := mpScalar(r, f.typ)
		if err != nil {
			return nil, whole, fmt.Errorf("%s: payload: %v", f.name, err)
		}
		if r.Remaining() != 0 {
			return nil, whole, errNeither
		}
		if len(m.keys) == 0 {
			return keyed, v, nil
		}
		whole = v
		r.Reset(p, mpLimits)
	}
	if len(m.keys) == 0 {
		return keyed, whole, nil
	}
	if k := r.PeekKind(); k != wire.MsgpackMap {
		return nil, whole, notAMap(p, k)
	}
	n, err := r.ReadMapHeader()
	if err != nil {
		return nil, whole, fmt.Errorf("payload: %v", err)
	}
	for range n {
		if k := r.PeekKind(); k != wire.MsgpackStr {
			return nil, whole, fmt.Errorf("payload: a map key is a %s, want a str", k)
		}
		k, err := r.ReadStringBytes()
		if err != nil {
			return nil, whole, fmt.Errorf("payload: %v", err)
		}
		i, ok := slicesIndex(m.keys, string(k))
		if !ok {
			if err := r.Skip(); err != nil {
				return nil, whole, fmt.Errorf("payload: %v", err)
			}
			continue
		}
		f := m.fieldOf(m.keys[i], false)
		v, err := mpScalar(r, f.typ)
		if err != nil {
			return nil, whole, fmt.Errorf("%s: $.%s: %v", f.name, m.keys[i], err)
		}
		keyed[i] = v
	}
	if r.Remaining() != 0 {
		return nil, whole, errors.New("payload: bytes after the msgpack map")
	}
	return keyed, whole, nil
}

// errNeither refuses a payload that decodes neither way.
var errNeither = errors.New("payload: neither JSON nor msgpack: send a JSON object or a msgpack map")

// notAMap explains a payload that is not JSON and does not begin with a
// msgpack map (whose first byte is of kind k): one msgpack value of another
// kind is named as such, anything else (text, truncated or trailing bytes)
// is neither encoding.
func notAMap(p []byte, k wire.MsgpackKind) error {
	if len(p) == 0 {
		return errors.New("payload: empty: send a JSON object or a msgpack map")
	}
	r := wire.NewMsgpackReader(p, mpLimits)
	if k == wire.MsgpackInvalid || r.Skip() != nil || r.Remaining() != 0 {
		return errNeither
	}
	return fmt.Errorf("payload: a msgpack %s: send a JSON object or a msgpack map", k)
}

// mpScalar reads one msgpack value as a value of type t.
func mpScalar(r *wire.MsgpackReader, t tier1.FieldType) (tier1.Value, error) {
	k := r.PeekKind()
	bad := fmt.Errorf("want a %s, got a msgpack %s", t, k)
	switch k {
	case wire.MsgpackNil:
		r.ReadNil()
		return tier1.Value{}, nil
	case wire.MsgpackStr, wire.MsgpackBin:
		if t != tier1.TypeStr && t != tier1.TypeBin {
			return tier1.Value{}, bad
		}
		var b []byte
		var err error
		if k == wire.MsgpackStr {
			b, err = r.ReadStringBytes()
		} else {
			b, err = r.ReadBytes()
		}
		if err != nil {
			return tier1.Value{}, err
		}
		if t == tier1.TypeStr {
			if !utf8.Valid(b) {
				return tier1.Value{}, errors.New("not valid UTF-8")
			}
			return tier1.Str(string(b)), nil
		}
		return tier1.Bin(b), nil
	case wire.MsgpackBool:
		b, err := r.ReadBool()
		if err != nil || t != tier1.TypeBool {
			return tier1.Value{}, bad
		}
		return tier1.Bool(b), nil
	case wire.MsgpackInt, wire.MsgpackUint:
		switch t {
		case tier1.TypeInt:
			i, err := r.ReadInt()
			if err != nil {
				return tier1.Value{}, err
			}
			return tier1.Int(i), nil
		case tier1.TypeUint:
			u, err := r.ReadUint()
			if err != nil {
				return tier1.Value{}, err
			}
			return tier1.Uint(u), nil
		case tier1.TypeFloat:
			if k == wire.MsgpackUint {
				u, err := r.ReadUint()
				return tier1.Float(float64(u)), err
			}
			i, err := r.ReadInt()
			return tier1.Float(float64(i)), err
		}
	case wire.MsgpackFloat:
		f, err := r.ReadFloat()
		if err != nil {
			return tier1.Value{}, err
		}
		switch t {
		case tier1.TypeFloat:
			return tier1.Float(f), nil
		case tier1.TypeInt, tier1.TypeUint:
			return fromNumber(formatFloat(f), t)
		}
	}
	return tier1.Value{}, bad
}

func formatFloat(f float64) string {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return "NaN"
	}
	return fmt.Sprintf("%.17g", f)
}
