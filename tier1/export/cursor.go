package export

import (
	"encoding/json"
	"fmt"

	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/tier1"
)

// pos is a place in the export log: the entries from seq Seq on, with
// Frames and Bytes the log's totals queued before it.
type pos struct {
	Seq    uint64 `json:"seq"`
	Frames uint64 `json:"frames"`
	Bytes  uint64 `json:"bytes"`
}

// after is the place after entry seq with header e.
func after(seq uint64, e tier1.OutboxEntry, batchLen int) pos {
	return pos{Seq: seq + 1, Frames: e.CumFrames + uint64(e.Frames), Bytes: e.CumBytes + uint64(batchLen)}
}

// at is the place of entry seq with header e.
func at(seq uint64, e tier1.OutboxEntry) pos {
	return pos{Seq: seq, Frames: e.CumFrames, Bytes: e.CumBytes}
}

// cursor is an export's durable record. Everything before Low is done.
// With Split, [LiveFrom, LiveHigh) is done too: the backlog lane is
// [Low, LiveFrom) and the live lane [LiveHigh, end). Start is where the
// export began, and Sent and Dropped count frames (SentBytes batch
// bytes) since then: stored since Start = Sent + Dropped + Skipped +
// queued.
type cursor struct {
	Low       pos    `json:"low"`
	Split     bool   `json:"split,omitempty"`
	LiveFrom  pos    `json:"live_from"`
	LiveHigh  pos    `json:"live_high"`
	Start     pos    `json:"start"`
	Sent      uint64 `json:"sent_frames"`
	SentBytes uint64 `json:"sent_bytes"`
	Dropped   uint64 `json:"dropped_frames"`
	Skipped   uint64 `json:"skipped_frames,omitempty"` // of routines not carried
	Paused    bool   `json:"paused,omitempty"`
}

func cursorKey(name string) string { return "t1_export/" + name }

// loadCursor reads the record of name (ok false when there is none).
func loadCursor(tx *store.Tx, name string) (c cursor, ok bool, err error) {
	v := tx.Meta(cursorKey(name))
	if v == nil {
		return c, false, nil
	}
	if err := json.Unmarshal(v, &c); err != nil {
		return c, false, fmt.Errorf("export %s: cursor record: %w", name, err)
	}
	return c, true, nil
}

func (c *cursor) put(tx *store.Tx, name string) error {
	v, err := json.Marshal(c)
	if err != nil {
		return err
	}
	return tx.PutMeta(cursorKey(name), v)
}

// end is the place after the last entry queued.
func end(tx *store.Tx) pos {
	f, b, next := tier1.OutboxTotals(tx)
	return pos{Seq: next, Frames: f, Bytes: b}
}

// queued is how many frames and bytes wait (both lanes), with end the
// log's end.
func (c *cursor) queued(end pos) (frames, bytes uint64) {
	if !c.Split {
		return end.Frames - c.Low.Frames, end.Bytes - c.Low.Bytes
	}
	return c.LiveFrom.Frames - c.Low.Frames + end.Frames - c.LiveHigh.Frames,
		c.LiveFrom.Bytes - c.Low.Bytes + end.Bytes - c.LiveHigh.Bytes
}
