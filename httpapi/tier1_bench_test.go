package httpapi_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/synapse-edge/synapse/tier1"
	"github.com/synapse-edge/synapse/wire"
)

// BenchmarkTier1Stream sends b.N telemetry frames in batches of 1 frame
// (msg=1) or 1000 frames (msg=1000), each batch with its own batch_id and
// in one WebSocket message, over one WebSocket to /tier1/stream of a real
// agent on a real data directory, without waiting for answers, and reads
// the acknowledgements (each sent after its batch is fsynced). One op is
// one frame. The client is as cheap as it can be: the masked WebSocket
// frames are built before the timer starts and written 64 KiB at a time,
// and the answers are counted, not decoded. So the figures are mostly the
// agent's:
//
//   - frames/s: frames acknowledged per second of wall time;
//   - cpu-µs/frame: user + system CPU of the whole process (the agent and
//     this client) per frame, from getrusage;
//   - frames/commit: frames (here batches) per fsynced store commit;
//   - allocs/op, B/op: the whole process per frame.
//
// msg=1/client=ws is the same with the client of bench/tier1 (and of most
// programs): one WebSocket write per batch, and each answer read as a
// message and decoded with wire.Msgpack; the difference in CPU per frame
// is that client's share.
func BenchmarkTier1Stream(b *testing.B) {
	for _, per := range []int{1, 1000} {
		b.Run(fmt.Sprintf("msg=%d", per), func(b *testing.B) { benchTier1Stream(b, per, false) })
	}
	b.Run("msg=1/client=ws", func(b *testing.B) { benchTier1Stream(b, 1, true) })
}

func benchTier1Stream(b *testing.B, per int, wsClient bool) {
	s := startBenchServer(b)
	hdr := http.Header{}
	hdr.Set("Authorization", "Bearer "+benchToken)
	url := "ws" + strings.TrimPrefix(s.base, "http") + wire.APIPrefix + "/tier1/stream"
	d := websocket.Dialer{ReadBufferSize: 64 << 10, WriteBufferSize: 64 << 10, HandshakeTimeout: 10 * time.Second}
	c, _, err := d.Dial(url, hdr)
	if err != nil {
		b.Fatalf("dial: %v", err)
	}
	defer c.Close()

	// Every batch is a distinct frame of one of 16 sensors, as a gateway
	// would send them, in one masked binary WebSocket frame.
	desc := tier1.Telemetry()
	ts0 := time.Now().UnixNano()
	msgs := (b.N + per - 1) / per
	wsFrames := make([]byte, 0, b.N*120+msgs*60)
	var batches [][]byte // for the ws client
	var batch []byte
	frames := make([]tier1.Frame, 0, per)
	for i := 0; i < b.N; {
		frames = frames[:0]
		for ; len(frames) < per && i < b.N; i++ {
			frames = append(frames, tier1.Frame{tier1.Str(fmt.Sprintf("site-0003/line-07/gateway-0042/sensor-%03d", i%16)),
				tier1.Uint(uint64(i)), tier1.Int(ts0 + int64(i)*1000), tier1.Str("temperature.ambient.celsius"),
				tier1.Float(20 + float64(i%100)/8), tier1.Str("degC")})
		}
		batch = tier1.AppendBatch(batch[:0], desc.CapabilityID, desc.Version, fmt.Sprintf("bench-%d", i),
			frames, &desc)
		if wsClient {
			batches = append(batches, bytes.Clone(batch))
			continue
		}
		wsFrames = appendMaskedFrame(wsFrames, batch, uint32(i)*2654435761)
	}
	nc := c.UnderlyingConn()
	commits0 := s.metric(b, "synapse_store_commits_total")
	bytes0, log0 := s.metric(b, "synapse_store_bytes_written_total"), s.metric(b, "synapse_store_log_bytes_total")
	var ru0, ru1 syscall.Rusage
	b.ReportAllocs()
	b.ResetTimer()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	start := time.Now()

	read := make(chan error, 1)
	_ = nc.SetDeadline(time.Now().Add(2 * time.Minute))
	if wsClient {
		go func() { read <- decodeAcks(c, msgs) }()
		for _, m := range batches {
			if err := c.WriteMessage(websocket.BinaryMessage, m); err != nil {
				b.Fatalf("send: %v", err)
			}
		}
	} else {
		go func() { read <- countAcks(nc, msgs) }()
	}
	for rest := wsFrames; len(rest) > 0; {
		n := min(len(rest), 64<<10)
		if _, err := nc.Write(rest[:n]); err != nil {
			b.Fatalf("send: %v", err)
		}
		rest = rest[n:]
	}
	if err := <-read; err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	b.StopTimer()
	commits1 := s.metric(b, "synapse_store_commits_total")
	s.checkpoint(b)
	bytes1, log1 := s.metric(b, "synapse_store_bytes_written_total"), s.metric(b, "synapse_store_log_bytes_total")

	cpu := time.Duration(ru1.Utime.Nano()-ru0.Utime.Nano()) + time.Duration(ru1.Stime.Nano()-ru0.Stime.Nano())
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "frames/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/frame")
	if commits1 > commits0 {
		b.ReportMetric(float64(b.N)/(commits1-commits0), "frames/commit")
	}
	// What a frame costs the disk: the log's record and the data file's
	// pages at the checkpoint, the one after the run included.
	b.ReportMetric((bytes1-bytes0)/float64(b.N), "storeB/frame")
	b.ReportMetric((log1-log0)/float64(b.N), "logB/frame")
}

// decodeAcks reads n answers as bench/tier1 does, and checks that each
// is ok.
func decodeAcks(c *websocket.Conn, n int) error {
	for i := range n {
		_, data, err := c.ReadMessage()
		if err != nil {
			return fmt.Errorf("ack %d of %d: %w", i+1, n, err)
		}
		var ack struct {
			OK       bool   `msgpack:"ok"`
			Accepted int    `msgpack:"accepted"`
			BatchID  string `msgpack:"batch_id"`
			Error    any    `msgpack:"error"`
		}
		if err := wire.Msgpack.Unmarshal(data, &ack); err != nil || !ack.OK {
			return fmt.Errorf("ack %d: %+v, %v", i+1, ack, err)
		}
	}
	return nil
}

// appendMaskedFrame appends payload as one final binary WebSocket frame
// from a client (masked, RFC 6455 §5.3).
func appendMaskedFrame(dst, payload []byte, key uint32) []byte {
	dst = append(dst, 0x80|websocket.BinaryMessage)
	switch n := len(payload); {
	case n < 126:
		dst = append(dst, 0x80|byte(n))
	case n <= 0xffff:
		dst = append(dst, 0x80|126, byte(n>>8), byte(n))
	default:
		dst = append(dst, 0x80|127)
		dst = binary.BigEndian.AppendUint64(dst, uint64(n))
	}
	var mask [4]byte
	binary.BigEndian.PutUint32(mask[:], key)
	dst = append(dst, mask[:]...)
	for i, c := range payload {
		dst = append(dst, c^mask[i&3])
	}
	return dst
}

// countAcks reads n unmasked server frames from r and checks that each is
// a binary message beginning {"ok":true: the agent's answer to a stored
// batch.
func countAcks(r io.Reader, n int) error {
	br := bufio.NewReaderSize(r, 64<<10)
	okPrefix := []byte{0xa2, 'o', 'k', 0xc3}
	var hdr [2]byte
	buf := make([]byte, 0, 256)
	for i := range n {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return fmt.Errorf("ack %d of %d: %w", i+1, n, err)
		}
		if hdr[0] != 0x80|websocket.BinaryMessage || hdr[1] >= 126 {
			return fmt.Errorf("ack %d: frame header %x, want one short final binary frame", i+1, hdr)
		}
		buf = buf[:hdr[1]]
		if _, err := io.ReadFull(br, buf); err != nil {
			return fmt.Errorf("ack %d of %d: %w", i+1, n, err)
		}
		if len(buf) < 5 || buf[0]&0xf0 != 0x80 || string(buf[1:5]) != string(okPrefix) {
			return fmt.Errorf("ack %d is not ok: %x", i+1, buf)
		}
	}
	return nil
}
