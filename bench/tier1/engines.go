package main

import (
	"context"
	"fmt"
	"time"

	"github.com/synapse-edge/synapse/wire"
)

// engine is one row of the table: a system under test at one message
// granularity.
type engine struct {
	Name    string `json:"name"`
	Unit    string `json:"unit"`    // what one message or transaction holds
	Batch   int    `json:"batch"`   // frames per message (records per transaction for bbolt)
	Frames  int    `json:"frames"`  // frames per run
	Ack     string `json:"ack"`     // what the rate waits for
	Pid     int    `json:"pid"`     // server process sampled for RSS and CPU, 0 if none
	Group   string `json:"group"`   // rows with the same Group compare to the same synapse row
	Synapse bool   `json:"synapse"` // a synapse row

	// prepare builds the messages of a run of frames frames in messages of
	// batch frames (untimed); the func it returns sends them and measures.
	prepare func(round, frames, batch int) (func(ctx context.Context) (runStats, error), error)
}

// runStats is what one run measured.
type runStats struct {
	Elapsed  time.Duration `json:"elapsed_ns"`
	Frames   int           `json:"frames"`
	Messages int           `json:"messages"`
	Bytes    int           `json:"payload_bytes"`
	// Synapse rows only: the agent's store counters over the run.
	Commits     float64 `json:"commits,omitempty"`
	Writes      float64 `json:"writes,omitempty"`
	CommitSecs  float64 `json:"commit_seconds,omitempty"`
	MaxRSS      int64   `json:"max_rss_bytes,omitempty"`
	CPU         float64 `json:"cpu_seconds,omitempty"`
	DiskBytes   int64   `json:"disk_bytes,omitempty"`
	FramesPerS  float64 `json:"frames_per_second"`
	FramesAcked int     `json:"frames_acked"`
}

// bench holds the clients and in-process engines of one harness run.
type bench struct {
	cfg   config
	gen   *generator
	nonce int64 // makes batch ids unique across harness runs
	sink  *sink
	bolt  *boltCeiling
	nats  *natsClient
}

// engines lists the rows in the order each round runs them.
func (b *bench) engines() []engine {
	c := b.cfg
	var es []engine
	add := func(single bool, e engine) {
		if single {
			if c.Single <= 0 {
				return
			}
			e.Batch, e.Frames, e.Group = 1, c.Single, "single"
			e.Unit = "1 frame/msg"
		} else {
			e.Frames, e.Group = c.Frames, "batch"
			if e.Batch == 0 {
				e.Batch = c.Batch
				e.Unit = fmt.Sprintf("%d frames/msg", c.Batch)
			}
		}
		es = append(es, e)
	}
	for _, single := range []bool{false, true} {
		if c.SynapseAddr != "" {
			add(single, engine{Name: "synapse WebSocket (durable)", Ack: "ack after fsync", Pid: c.SynapsePid, Synapse: true,
				prepare: b.synapseRun})
		}
		if c.MQTTAddr != "" {
			add(single, engine{Name: "mosquitto QoS1", Ack: "PUBACK", Pid: c.MQTTPid, prepare: b.mqttRun})
		}
		if c.NATSAddr != "" {
			add(single, engine{Name: "NATS JetStream file, async", Ack: "PubAck", Pid: c.NATSPid, prepare: b.natsRun})
		}
		if !single {
			add(false, engine{Name: "bbolt ceiling", Ack: "commit (fsync)", Batch: boltPerTx,
				Unit: fmt.Sprintf("%d records/tx", boltPerTx), prepare: b.boltRun})
		}
		add(single, engine{Name: "bare WebSocket sink", Ack: "ack, nothing stored", prepare: b.sinkRun})
	}
	return es
}

// boltPerTx is the transaction size of the bbolt ceiling.
const boltPerTx = 1000

func (b *bench) messages(round, frames, batch int, tag string) [][]byte {
	first := b.gen.take(frames)
	if batch == 1 && tag != "synapse" && tag != "sink" {
		return b.gen.frames(first, frames)
	}
	return b.gen.batches(first, frames, batch, fmt.Sprintf("%x-r%d-%s-%d", b.nonce, round, tag, batch))
}

func (b *bench) synapseRun(round, frames int, batch int) (func(context.Context) (runStats, error), error) {
	msgs := b.messages(round, frames, batch, "synapse")
	c := b.cfg
	return func(ctx context.Context) (runStats, error) {
		before, err := scrapeMetrics(ctx, c.SynapseAddr, c.Token)
		if err != nil {
			return runStats{}, err
		}
		url := "ws://" + c.SynapseAddr + wire.APIPrefix + "/tier1/stream"
		elapsed, acked, err := wsIngest(ctx, url, c.Token, msgs, c.Window)
		if err != nil {
			return runStats{}, fmt.Errorf("synapse: %w", err)
		}
		after, err := scrapeMetrics(ctx, c.SynapseAddr, c.Token)
		if err != nil {
			return runStats{}, err
		}
		if got := int(after[metricFrames] - before[metricFrames]); got != frames || acked != frames {
			return runStats{}, fmt.Errorf("synapse: sent %d frames, acks accepted %d, %s grew by %d",
				frames, acked, metricFrames, got)
		}
		return runStats{Elapsed: elapsed, Frames: frames, FramesAcked: acked, Messages: len(msgs), Bytes: totalBytes(msgs),
			Commits:    after[metricCommits] - before[metricCommits],
			Writes:     after[metricWrites] - before[metricWrites],
			CommitSecs: after[metricCommitSecs] - before[metricCommitSecs],
		}, nil
	}, nil
}

func (b *bench) mqttRun(round, frames int, batch int) (func(context.Context) (runStats, error), error) {
	msgs := b.messages(round, frames, batch, "mqtt")
	id := fmt.Sprintf("tier1bench-%x-%d-%d", b.nonce, round, batch)
	return func(ctx context.Context) (runStats, error) {
		elapsed, err := mqttPublish(ctx, b.cfg.MQTTAddr, id, msgs, b.cfg.Window)
		if err != nil {
			return runStats{}, err
		}
		return runStats{Elapsed: elapsed, Frames: frames, FramesAcked: frames, Messages: len(msgs), Bytes: totalBytes(msgs)}, nil
	}, nil
}

func (b *bench) natsRun(round, frames int, batch int) (func(context.Context) (runStats, error), error) {
	msgs := b.messages(round, frames, batch, "nats")
	return func(ctx context.Context) (runStats, error) {
		elapsed, err := b.nats.publish(ctx, msgs)
		if err != nil {
			return runStats{}, err
		}
		return runStats{Elapsed: elapsed, Frames: frames, FramesAcked: frames, Messages: len(msgs), Bytes: totalBytes(msgs)}, nil
	}, nil
}

func (b *bench) boltRun(_, frames int, perTx int) (func(context.Context) (runStats, error), error) {
	first := b.gen.take(frames)
	keys, vals := b.gen.boltKeys(first, frames), b.gen.frames(first, frames)
	return func(context.Context) (runStats, error) {
		elapsed, err := b.bolt.write(keys, vals, perTx)
		if err != nil {
			return runStats{}, err
		}
		return runStats{Elapsed: elapsed, Frames: frames, FramesAcked: frames, Messages: (frames + perTx - 1) / perTx,
			Bytes: totalBytes(vals)}, nil
	}, nil
}

func (b *bench) sinkRun(round, frames int, batch int) (func(context.Context) (runStats, error), error) {
	msgs := b.messages(round, frames, batch, "sink")
	return func(ctx context.Context) (runStats, error) {
		elapsed, acked, err := wsIngest(ctx, b.sink.url(), "", msgs, b.cfg.Window)
		if err != nil {
			return runStats{}, fmt.Errorf("sink: %w", err)
		}
		if acked != frames {
			return runStats{}, fmt.Errorf("sink: sent %d frames, acks accepted %d", frames, acked)
		}
		return runStats{Elapsed: elapsed, Frames: frames, FramesAcked: acked, Messages: len(msgs), Bytes: totalBytes(msgs)}, nil
	}, nil
}
