package main

import (
	"encoding/binary"
	"fmt"

	"github.com/synapse-edge/synapse/tier1"
)

// The telemetry every engine carries: one synapse.telemetry frame per
// reading from one of a gateway's sensors. The strings are chosen so that
// one encoded frame is exactly frameBytes bytes:
//
//	1  array header (6 values)
//	43 device_id  str 8, 41 bytes "site-0003/line-07/gateway-0042/sensor-007"
//	5  seq        uint 32 (seqBase keeps it in 32 bits)
//	9  ts         uint 64 (unix ns)
//	28 metric     fixstr 27 "temperature.ambient.celsius"
//	9  value      float 64 (never exact in float 32)
//	5  unit       fixstr 4 "degC"
const (
	devicePrefix = "site-0003/line-07/gateway-0042/sensor-"
	sensors      = 16
	metricName   = "temperature.ambient.celsius"
	unitName     = "degC"
	seqBase      = 1 << 20
	frameBytes   = 100
)

// generator makes telemetry frames with increasing seq and ts, so frames of
// different runs never collide.
type generator struct {
	desc    tier1.Descriptor
	devices [sensors]string
	next    uint64 // frames made so far
	baseTS  int64  // ts of frame 0, unix ns
}

func newGenerator(baseTS int64) *generator {
	g := &generator{desc: tier1.Telemetry(), baseTS: baseTS}
	for i := range g.devices {
		g.devices[i] = fmt.Sprintf("%s%03d", devicePrefix, i)
	}
	return g
}

// frame returns frame number i (0-based over the generator's life).
func (g *generator) frame(i uint64) tier1.Frame {
	return tier1.Frame{
		tier1.Str(g.devices[i%sensors]),
		tier1.Uint(seqBase + i),
		tier1.Int(g.baseTS + int64(i)*1000),
		tier1.Str(metricName),
		tier1.Float(15 + float64(i%2000)*0.01 + 0.001),
		tier1.Str(unitName),
	}
}

// take reserves the next n frame numbers and returns the first.
func (g *generator) take(n int) uint64 {
	first := g.next
	g.next += uint64(n)
	return first
}

// batches encodes frames first..first+n-1 as tier-1 batches of up to size
// frames each, with batch ids idPrefix-0, idPrefix-1, ...
func (g *generator) batches(first uint64, n, size int, idPrefix string) [][]byte {
	out := make([][]byte, 0, (n+size-1)/size)
	frames := make([]tier1.Frame, 0, size)
	for off := 0; off < n; off += size {
		frames = frames[:0]
		for i := off; i < min(off+size, n); i++ {
			frames = append(frames, g.frame(first+uint64(i)))
		}
		id := fmt.Sprintf("%s-%d", idPrefix, len(out))
		buf := make([]byte, 0, 64+len(frames)*(frameBytes+2))
		out = append(out, tier1.AppendBatch(buf, g.desc.CapabilityID, g.desc.Version, id, frames, &g.desc))
	}
	return out
}

// frames encodes frames first..first+n-1 one by one (tier1.AppendFrame),
// all in one backing array.
func (g *generator) frames(first uint64, n int) [][]byte {
	buf := make([]byte, 0, n*(frameBytes+2))
	out := make([][]byte, n)
	for i := range n {
		start := len(buf)
		buf = tier1.AppendFrame(buf, g.frame(first+uint64(i)))
		out[i] = buf[start:len(buf):len(buf)]
	}
	return out
}

// boltKeys returns the keys of the bbolt ceiling: an 8-byte big-endian
// counter then the device id, for frames first..first+n-1.
func (g *generator) boltKeys(first uint64, n int) [][]byte {
	buf := make([]byte, 0, n*(8+len(devicePrefix)+3))
	out := make([][]byte, n)
	for i := range n {
		start := len(buf)
		buf = binary.BigEndian.AppendUint64(buf, first+uint64(i))
		buf = append(buf, g.devices[(first+uint64(i))%sensors]...)
		out[i] = buf[start:len(buf):len(buf)]
	}
	return out
}

// totalBytes adds up the lengths of msgs.
func totalBytes(msgs [][]byte) int {
	n := 0
	for _, m := range msgs {
		n += len(m)
	}
	return n
}
