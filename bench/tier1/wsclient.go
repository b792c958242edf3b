package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/synapse-edge/synapse/wire"
)

// wsAck is the answer to one batch: {"ok":true,"accepted":N,"batch_id":...}
// or {"ok":false,"error":{...}}.
type wsAck struct {
	OK       bool   `msgpack:"ok"`
	Accepted int    `msgpack:"accepted"`
	BatchID  string `msgpack:"batch_id"`
	Error    any    `msgpack:"error"`
}

// errAckRefused: the server answered a batch with ok false.
var errAckRefused = errors.New("batch refused")

// wsIngest sends msgs over one WebSocket connection to url, one binary
// message each, while a reader counts the acknowledgements. It does not
// wait for an ack before the next send: the server's read-ahead window and
// TCP back-pressure pace the writer. It returns the time from the first
// send to the last ack and the frames the acks accepted.
func wsIngest(ctx context.Context, url, token string, msgs [][]byte) (time.Duration, int, error) {
	hdr := http.Header{}
	if token != "" {
		hdr.Set("Authorization", "Bearer "+token)
	}
	d := websocket.Dialer{ReadBufferSize: 64 << 10, WriteBufferSize: 64 << 10, HandshakeTimeout: 10 * time.Second}
	c, resp, err := d.DialContext(ctx, url, hdr)
	if err != nil {
		if resp != nil {
			return 0, 0, fmt.Errorf("dial %s: %w (HTTP %d)", url, err, resp.StatusCode)
		}
		return 0, 0, fmt.Errorf("dial %s: %w", url, err)
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetReadDeadline(dl)
		_ = c.SetWriteDeadline(dl)
	}

	type outcome struct {
		end      time.Time
		accepted int
		err      error
	}
	read := make(chan outcome, 1)
	go func() {
		accepted, err := readAcks(c, len(msgs))
		if err != nil {
			_ = c.Close() // unblocks the writer
		}
		read <- outcome{end: time.Now(), accepted: accepted, err: err}
	}()

	start := time.Now()
	var werr error
	for _, m := range msgs {
		if werr = c.WriteMessage(websocket.BinaryMessage, m); werr != nil {
			werr = fmt.Errorf("send batch: %w", werr)
			break
		}
	}
	if werr != nil {
		_ = c.Close() // unblocks the reader
		if out := <-read; out.err != nil {
			return 0, 0, out.err // the cause, when the reader saw it first
		}
		return 0, 0, werr
	}
	out := <-read
	if out.err != nil {
		return 0, 0, out.err
	}
	_ = c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""),
		time.Now().Add(time.Second))
	return out.end.Sub(start), out.accepted, nil
}

// readAcks reads n acks and adds up the frames they accepted; it stops at
// the first refusal.
func readAcks(c *websocket.Conn, n int) (int, error) {
	accepted := 0
	for i := range n {
		_, data, err := c.ReadMessage()
		if err != nil {
			return accepted, fmt.Errorf("read ack %d of %d: %w", i+1, n, err)
		}
		var ack wsAck
		if err := wire.Msgpack.Unmarshal(data, &ack); err != nil {
			return accepted, fmt.Errorf("decode ack %d: %w", i+1, err)
		}
		if !ack.OK {
			return accepted, fmt.Errorf("ack %d (batch %q): %w: %v", i+1, ack.BatchID, errAckRefused, ack.Error)
		}
		accepted += ack.Accepted
	}
	return accepted, nil
}
