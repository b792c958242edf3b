package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
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
// One goroutine may Send while another Receives; Close may be called from
// any goroutine and unblocks both.
type Tier1Stream struct {
	conn *websocket.Conn
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
	return &Tier1Stream{conn: conn}, nil
}

// Send writes one batch as one binary message.
func (s *Tier1Stream) Send(batch []byte) error {
	if err := s.conn.WriteMessage(websocket.BinaryMessage, batch); err != nil {
		return fmt.Errorf("tier-1 stream: send batch: %w", err)
	}
	return nil
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
	_ = s.conn.WriteControl(websocket.CloseMessage,
		websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	return s.conn.Close()
}
