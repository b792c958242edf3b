package client

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/synapse-edge/synapse/wire"
)

// Tier1Field is one positional field of a tier-1 routine.
type Tier1Field struct {
	Name     string `json:"name"`
	Type     string `json:"type"` // str, int, uint, float, bool or bin
	Unit     string `json:"unit,omitempty"`
	Optional bool   `json:"optional,omitempty"`
}

// Tier1Routine is a standardized routine (a CapabilityDescriptor) with its
// descriptor hash, as GET /tier1/routines lists it.
type Tier1Routine struct {
	CapabilityID string       `json:"capability_id"`
	Version      string       `json:"version"`
	Name         string       `json:"name"`
	Description  string       `json:"description"`
	Fields       []Tier1Field `json:"fields"`
	Hash         string       `json:"hash"`
}

// Tier1FrameQuery selects frames of GET /tier1/{capability_id}/frames.
// Since and Until are RFC 3339 times or unix nanoseconds; empty means
// unbounded.
type Tier1FrameQuery struct {
	Since, Until string
	DeviceID     string
	// Limit is the page size (the agent allows 1 to 10,000; 0 means its
	// default).
	Limit     int
	PageToken string
}

// Tier1FramePage is one page of frames: JSON objects keyed by field name,
// exactly as the agent wrote them (64-bit integers in full).
type Tier1FramePage struct {
	CapabilityID  string            `json:"capability_id"`
	Frames        []json.RawMessage `json:"frames"`
	NextPageToken string            `json:"next_page_token,omitempty"`
}

// Tier1AckError is the TPError of a refused batch.
type Tier1AckError struct {
	Code      string         `json:"code" msgpack:"code"`
	Message   string         `json:"message" msgpack:"message"`
	Details   map[string]any `json:"details,omitempty" msgpack:"details,omitempty"`
	Retriable bool           `json:"retriable,omitempty" msgpack:"retriable,omitempty"`
}

// Error formats the error as "code: message".
func (e *Tier1AckError) Error() string {
	return strings.TrimPrefix(e.Code+": "+e.Message, ": ")
}

// Tier1Ack answers one batch: {"ok":true,"accepted":N,"batch_id":...} once
// the batch is durable, or {"ok":false,"error":{...}}. Over the WebSocket
// it comes as a msgpack map with the same keys; the struct carries msgpack
// tags for any decoder that reads them.
type Tier1Ack struct {
	OK        bool           `json:"ok" msgpack:"ok"`
	Accepted  int            `json:"accepted" msgpack:"accepted"`
	BatchID   string         `json:"batch_id,omitempty" msgpack:"batch_id,omitempty"`
	Duplicate bool           `json:"duplicate,omitempty" msgpack:"duplicate,omitempty"`
	Error     *Tier1AckError `json:"error,omitempty" msgpack:"error,omitempty"`
}

// Tier1Routines lists the agent's tier-1 routines with their descriptor
// hashes (GET /tier1/routines, scope tier1:read).
func (c *Client) Tier1Routines(ctx context.Context) ([]Tier1Routine, error) {
	var out struct {
		Routines []Tier1Routine `json:"routines"`
	}
	if _, _, err := c.do(ctx, http.MethodGet, "/tier1/routines", nil, nil, &out); err != nil {
		return nil, fmt.Errorf("list tier-1 routines: %w", err)
	}
	return out.Routines, nil
}

// Tier1Frames returns one page of stored frames of a routine in time order
// (GET /tier1/{capability_id}/frames, scope tier1:read); pass the returned
// NextPageToken as q.PageToken for the next page, until it is empty.
func (c *Client) Tier1Frames(ctx context.Context, capabilityID string, q Tier1FrameQuery) (*Tier1FramePage, error) {
	eid, err := escapeID(capabilityID)
	if err != nil {
		return nil, fmt.Errorf("tier-1 frames: %w", err)
	}
	v := url.Values{}
	for k, s := range map[string]string{"since": q.Since, "until": q.Until, "device_id": q.DeviceID, "page_token": q.PageToken} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	var page Tier1FramePage
	if _, _, err := c.do(ctx, http.MethodGet, "/tier1/"+eid+"/frames", v, nil, &page); err != nil {
		return nil, fmt.Errorf("tier-1 frames of %s: %w", capabilityID, err)
	}
	return &page, nil
}

// IngestTier1 posts one msgpack batch (POST /tier1/{capability_id}, scope
// tier1:write) and returns the agent's acknowledgement, which it sends once
// the batch is durable. A refused batch is an *APIError.
func (c *Client) IngestTier1(ctx context.Context, capabilityID string, batch []byte) (*Tier1Ack, error) {
	eid, err := escapeID(capabilityID)
	if err != nil {
		return nil, fmt.Errorf("tier-1 ingest: %w", err)
	}
	req, err := c.newRequest(ctx, http.MethodPost, "/tier1/"+eid, nil, nil)
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(bytes.NewReader(batch))
	req.ContentLength = int64(len(batch))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(batch)), nil }
	req.Header.Set("Content-Type", "application/msgpack")
	resp, err := c.send(req)
	if err != nil {
		return nil, fmt.Errorf("tier-1 ingest into %s: %w", capabilityID, err)
	}
	defer resp.Body.Close()
	var ack Tier1Ack
	if err := readJSON(resp.Body, &ack); err != nil {
		return nil, fmt.Errorf("tier-1 ingest into %s: %w", capabilityID, err)
	}
	return &ack, nil
}

// tier1HandshakeTimeout bounds the WebSocket opening handshake.
const tier1HandshakeTimeout = 10 * time.Second

// tier1StreamBuffer is the read and write buffer size of a tier-1 stream.
const tier1StreamBuffer = 64 << 10

// Tier1Stream is an open WebSocket of GET /tier1/stream: each binary
// message sent is one batch, and the agent answers each, in order, with a
// msgpack map that decodes into a Tier1Ack once the batch is durable. The
// agent reads up to 4,096 batches ahead of its answers (within its in-flight
// byte budget, 16 MiB by default), so a sender need not wait for one answer
// before sending the next batch.
//
// One goroutine may Send (or Queue and Flush) while another Receives;
// Close may be called from any goroutine and unblocks both.
type Tier1Stream struct {
	conn   *websocket.Conn
	buf    []byte        // frames Queue buffered, not written yet
	rng    *rand.ChaCha8 // the masking keys of Queue's frames
	closed atomic.Bool   // Close was called
}

// ErrTier1StreamClosing is in Send's error when a close frame was already
// sent on the stream (by Close, or by the reader answering the agent's
// close): the agent's reason is then what Receive returns.
var ErrTier1StreamClosing = websocket.ErrCloseSent

// ErrTier1StreamText is returned by Receive when the agent sends a text
// message, which the tier-1 stream never does.
var ErrTier1StreamText = errors.New("client: text message on the tier-1 stream")

// DialTier1Stream opens the tier-1 WebSocket (scope tier1:write). A refused
// handshake is an *APIError.
func (c *Client) DialTier1Stream(ctx context.Context) (*Tier1Stream, error) {
	u, err := url.Parse(c.base + wire.APIPrefix + "/tier1/stream")
	if err != nil {
		return nil, fmt.Errorf("tier-1 stream: %w", err)
	}
	switch u.Scheme {
	case "http":
		u.Scheme = "ws"
	case "https":
		u.Scheme = "wss"
	}
	hdr := http.Header{}
	hdr.Set("User-Agent", c.userAgent)
	if c.token != "" {
		hdr.Set("Authorization", "Bearer "+c.token)
	}
	d := websocket.Dialer{
		Proxy:            http.ProxyFromEnvironment,
		HandshakeTimeout: tier1HandshakeTimeout,
		ReadBufferSize:   tier1StreamBuffer,
		WriteBufferSize:  tier1StreamBuffer,
	}
	if t, ok := c.hc.Transport.(*http.Transport); ok && t != nil {
		d.TLSClientConfig = t.TLSClientConfig
		d.NetDialContext = t.DialContext
		d.Proxy = t.Proxy
	}
	conn, resp, err := d.DialContext(ctx, u.String(), hdr)
	if err != nil {
		if resp != nil {
			defer resp.Body.Close()
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			return nil, fmt.Errorf("tier-1 stream: %w", DecodeError(resp.StatusCode, body))
		}
		return nil, fmt.Errorf("tier-1 stream: %w", err)
	}
	var seed [32]byte
	for i := 0; i < len(seed); i += 8 {
		binary.LittleEndian.PutUint64(seed[i:], rand.Uint64())
	}
	return &Tier1Stream{conn: conn, rng: rand.NewChaCha8(seed)}, nil
}

// Send writes one batch as one binary message (one write to the
// connection; Queue and Flush share writes between batches). Batches
// Queue buffered are written first.
func (s *Tier1Stream) Send(batch []byte) error {
	if err := s.Flush(); err != nil {
		return err
	}
	if err := s.conn.WriteMessage(websocket.BinaryMessage, batch); err != nil {
		return fmt.Errorf("tier-1 stream: send batch: %w", err)
	}
	return nil
}

// Queue appends batch to the stream's send buffer as one binary message;
// the buffer is written when the next batch would not fit (64 KiB) and by
// Flush. A sender of many small batches so makes one write for many of
// them, as a device library buffers its publishes; it must Flush before
// it waits for answers, or the batches still buffered are never sent.
// Queue keeps nothing of batch once it returns.
//
// Each batch is one final, masked binary frame (RFC 6455 §5.2) with a
// fresh masking key (§5.3), written to the connection in one Write of
// whole frames: it does not interleave with the library's control frames
// (the reader's pongs, Close), each a single Write too.
func (s *Tier1Stream) Queue(batch []byte) error {
	if s.closed.Load() {
		return fmt.Errorf("tier-1 stream: send batch: %w", ErrTier1StreamClosing)
	}
	if len(s.buf) > 0 && len(s.buf)+len(batch)+14 > tier1StreamBuffer {
		if err := s.Flush(); err != nil {
			return err
		}
	}
	if s.buf == nil {
		s.buf = make([]byte, 0, tier1StreamBuffer)
	}
	s.buf = appendMaskedFrame(s.buf, websocket.BinaryMessage, batch, uint32(s.rng.Uint64()))
	return nil
}

// Flush writes the batches Queue buffered.
func (s *Tier1Stream) Flush() error {
	if len(s.buf) == 0 {
		return nil
	}
	if s.closed.Load() {
		return fmt.Errorf("tier-1 stream: send batch: %w", ErrTier1StreamClosing)
	}
	_, err := s.conn.UnderlyingConn().Write(s.buf)
	s.buf = s.buf[:0]
	if err != nil {
		return fmt.Errorf("tier-1 stream: send batches: %w", err)
	}
	return nil
}

// appendMaskedFrame appends payload as one final client frame of type op,
// masked with key.
func appendMaskedFrame(dst []byte, op int, payload []byte, key uint32) []byte {
	dst = append(dst, 0x80|byte(op))
	switch n := len(payload); {
	case n < 126:
		dst = append(dst, 0x80|byte(n))
	case n <= 0xffff:
		dst = append(dst, 0x80|126, byte(n>>8), byte(n))
	default:
		dst = binary.BigEndian.AppendUint64(append(dst, 0x80|127), uint64(n))
	}
	var k [4]byte
	binary.LittleEndian.PutUint32(k[:], key)
	dst = append(dst, k[:]...)
	off := len(dst)
	dst = append(dst, payload...)
	m := dst[off:]
	i := 0
	if len(m) >= 8 {
		k8 := uint64(key) | uint64(key)<<32
		for ; i+8 <= len(m); i += 8 {
			binary.LittleEndian.PutUint64(m[i:], binary.LittleEndian.Uint64(m[i:])^k8)
		}
	}
	for ; i < len(m); i++ {
		m[i] ^= k[i&3]
	}
	return dst
}

// Receive returns the next acknowledgement, the msgpack bytes of a map
// that decodes into a Tier1Ack. It answers the agent's pings meanwhile, so
// keep a goroutine in Receive for as long as the stream is open.
func (s *Tier1Stream) Receive() ([]byte, error) {
	mt, data, err := s.conn.ReadMessage()
	if err != nil {
		return nil, fmt.Errorf("tier-1 stream: read acknowledgement: %w", err)
	}
	if mt != websocket.BinaryMessage {
		return nil, ErrTier1StreamText
	}
	return data, nil
}

// WebSocketOverhead returns the bytes a WebSocket client adds around a
// message of n bytes sent in one frame: the frame header and the masking
// key.
func WebSocketOverhead(n int) int {
	switch {
	case n <= 125:
		return 2 + 4
	case n <= 0xffff:
		return 4 + 4
	}
	return 10 + 4
}

// Close sends a normal closure, when it can within a second, and closes
// the connection. It is safe to call more than once.
func (s *Tier1Stream) Close() error {
	s.closed.Store(true)
	_ = s.conn.WriteControl(websocket.CloseMessage,
		websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	return s.conn.Close()
}

// DecodeTier1Ack decodes an acknowledgement Receive returned into ack. The
// answers of stored batches (a map of ok, accepted, batch_id and
// duplicate, as the agent writes them) are read without reflection or
// allocation beyond the batch id; anything else, a refusal with its error
// say, goes through the msgpack decoder.
func DecodeTier1Ack(data []byte, ack *Tier1Ack) error {
	if decodeTier1AckFast(data, ack) {
		return nil
	}
	*ack = Tier1Ack{}
	return wire.Msgpack.Unmarshal(data, ack)
}

// decodeTier1AckFast reads data as a fixmap of short string keys ok,
// accepted, batch_id and duplicate with bool, non-negative int and string
// values; it reports false for anything else.
func decodeTier1AckFast(data []byte, ack *Tier1Ack) bool {
	if len(data) == 0 || data[0]&0xf0 != 0x80 {
		return false
	}
	*ack = Tier1Ack{}
	n, i := int(data[0]&0x0f), 1
	for range n {
		if i >= len(data) || data[i]&0xe0 != 0xa0 {
			return false
		}
		kl := int(data[i] & 0x1f)
		if i+1+kl >= len(data) {
			return false
		}
		key := data[i+1 : i+1+kl]
		i += 1 + kl
		c := data[i]
		switch string(key) {
		case "ok", "duplicate":
			if c != 0xc2 && c != 0xc3 {
				return false
			}
			if key[0] == 'o' {
				ack.OK = c == 0xc3
			} else {
				ack.Duplicate = c == 0xc3
			}
			i++
		case "accepted":
			v, w, ok := msgpackUint(data[i:])
			if !ok || v > 1<<31 {
				return false
			}
			ack.Accepted, i = int(v), i+w
		case "batch_id":
			var l, h int
			switch {
			case c&0xe0 == 0xa0:
				l, h = int(c&0x1f), 1
			case c == 0xd9 && i+1 < len(data):
				l, h = int(data[i+1]), 2
			case c == 0xda && i+2 < len(data):
				l, h = int(binary.BigEndian.Uint16(data[i+1:])), 3
			default:
				return false
			}
			if i+h+l > len(data) {
				return false
			}
			ack.BatchID, i = string(data[i+h:i+h+l]), i+h+l
		default:
			return false
		}
	}
	return i == len(data)
}

// msgpackUint reads a non-negative msgpack integer from the start of b
// and its width.
func msgpackUint(b []byte) (uint64, int, bool) {
	switch c := b[0]; {
	case c < 0x80:
		return uint64(c), 1, true
	case c == 0xcc && len(b) >= 2:
		return uint64(b[1]), 2, true
	case c == 0xcd && len(b) >= 3:
		return uint64(binary.BigEndian.Uint16(b[1:])), 3, true
	case c == 0xce && len(b) >= 5:
		return uint64(binary.BigEndian.Uint32(b[1:])), 5, true
	}
	return 0, 0, false
}
