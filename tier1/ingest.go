package tier1

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// IngestConfig configures an Ingestor.
type IngestConfig struct {
	Limits Limits
	// MaxInflightBytes bounds the memory of the batches decoded and
	// waiting for the disk at once, each counted at what it holds decoded
	// (at least 512 bytes; about 4.5 times its size for a batch of many
	// frames); senders wait beyond it (back-pressure). Default 16 MiB.
	MaxInflightBytes int64
	// Uplink queues every stored batch in the export log (outbox.go), as
	// EnableOutbox does.
	Uplink bool
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Result is the outcome of one ingested batch.
type Result struct {
	Accepted  int    `json:"accepted" msgpack:"accepted"`
	BatchID   string `json:"batch_id,omitempty" msgpack:"batch_id,omitempty"`
	Duplicate bool   `json:"duplicate,omitempty" msgpack:"duplicate,omitempty"`
}

// Counters are the ingest counters, for /metrics.
type Counters struct {
	Frames, Batches, Duplicates, Refused, Bytes, Pruned atomic.Uint64
}

// Ingestor validates batches and stores their frames durably: a batch is
// acknowledged only after the transaction holding it is fsynced. Batches
// from many senders share transactions through the store's group commit.
type Ingestor struct {
	reg    *Registry
	db     *store.DB
	cfg    IngestConfig
	budget *byteBudget
	keys   map[string]keyFields
	C      Counters
	// queued is poked when a batch is queued for the uplink.
	queued chan struct{}
	outbox atomic.Bool // queue stored batches in the export log
	watch  watchers    // live views (watch.go)
	disk   *disk       // the disk budget, once UseDisk (disk.go)
}

// keyFields are the positions of the fields that order a routine's frames.
type keyFields struct{ ts, device int }

// NewIngestor builds an ingestor over db for the routines of reg.
func NewIngestor(reg *Registry, db *store.DB, cfg IngestConfig) *Ingestor {
	if cfg.MaxInflightBytes <= 0 {
		cfg.MaxInflightBytes = 16 << 20
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	in := &Ingestor{reg: reg, db: db, cfg: cfg, budget: newByteBudget(cfg.MaxInflightBytes),
		keys: map[string]keyFields{}, queued: make(chan struct{}, 1)}
	in.outbox.Store(cfg.Uplink)
	for _, d := range reg.List() {
		k := keyFields{ts: -1, device: -1}
		for i, f := range d.Fields {
			switch {
			case f.Name == "ts" && f.Type == TypeInt:
				k.ts = i
			case f.Name == "device_id" && f.Type == TypeStr:
				k.device = i
			}
		}
		in.keys[d.CapabilityID] = k
	}
	return in
}

// Registry is the ingestor's routines.
func (in *Ingestor) Registry() *Registry { return in.reg }

// EnableOutbox queues every batch stored from now on in the export log
// for the exports (package tier1/export), which call it before ingest
// starts.
func (in *Ingestor) EnableOutbox() { in.outbox.Store(true) }

// Queued is poked (without blocking) whenever a batch is queued upstream.
func (in *Ingestor) Queued() <-chan struct{} { return in.queued }

// Ingest stores one batch sent by scope (the sender's identity, used for
// batch_id deduplication). wantID, if not empty, is the routine the route
// named; the batch must be for it. It returns after the batch is durable.
func (in *Ingestor) Ingest(ctx context.Context, scope, wantID string, body []byte) (Result, error) {
	var res Result
	var err error
	done := make(chan struct{})
	if qerr := in.IngestAsync(ctx, scope, wantID, body, func(r Result, e error) {
		res, err = r, e
		close(done)
	}); qerr != nil {
		return Result{}, qerr
	}
	<-done
	return res, err
}

// IngestAsync decodes the batch now and queues its write; cb gets the
// outcome once the batch is durable (or refused), from the store's writer
// goroutine, in the order the batches were queued, and must not block. An
// error returned directly means cb will not be called.
func (in *Ingestor) IngestAsync(ctx context.Context, scope, wantID string, body []byte, cb func(Result, error)) error {
	p, err := in.Prepare(ctx, scope, wantID, body)
	if err != nil {
		return err
	}
	ps := []*Pending{p}
	in.Store(ps, func() { cb(p.Result, p.Err) })
	return nil
}

// refusal turns a decode error into the client-visible error, with the index
// of the first bad frame.
func refusal(err error) error {
	var we *wire.Error
	if errors.As(err, &we) {
		return we
	}
	var fe *FrameError
	switch {
	case errors.Is(err, wire.ErrInvalidUTF8) && errors.As(err, &fe):
		return wire.Errorf(wire.CodeValUTF8, "batch refused: %v", err).
			With("frame_index", fe.Index).With("field", fe.Field)
	case errors.Is(err, wire.ErrInvalidUTF8):
		return wire.Errorf(wire.CodeValUTF8, "batch refused: %v", err)
	case errors.As(err, &fe):
		return wire.Errorf(wire.CodeInvalidParams, "batch refused: %v", err).
			With("frame_index", fe.Index).With("field", fe.Field)
	case errors.Is(err, ErrUnknownRoutine), errors.Is(err, ErrVersionMismatch):
		return wire.Errorf(wire.CodeCapabilityLacking, "batch refused: %v", err)
	case errors.Is(err, ErrTooManyFrames):
		return wire.Errorf(wire.CodePayloadTooLarge, "batch refused: %v", err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return wire.Errorf(wire.CodeAgentNotReady, "batch not stored: %v", err)
	}
	return wire.Errorf(wire.CodeMessageFormatInvalid, "batch refused: %v", err)
}

// byteBudget is a counting semaphore over bytes.
type byteBudget struct {
	mu    sync.Mutex
	cond  *sync.Cond
	free  int64
	limit int64
}

func newByteBudget(limit int64) *byteBudget {
	b := &byteBudget{free: limit, limit: limit}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// acquire takes n bytes, waiting while they are not free. A request larger
// than the whole budget waits until the budget is entirely free.
func (b *byteBudget) acquire(ctx context.Context, n int64) error {
	n = min(n, b.limit)
	b.mu.Lock()
	if b.free >= n { // the usual case: no need to watch ctx
		b.free -= n
		b.mu.Unlock()
		return nil
	}
	b.mu.Unlock()
	stop := context.AfterFunc(ctx, func() {
		b.mu.Lock()
		b.cond.Broadcast()
		b.mu.Unlock()
	})
	defer stop()
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.free < n {
		if err := ctx.Err(); err != nil {
			return wire.Errorf(wire.CodeAgentNotReady, "waiting for the disk: %v", err)
		}
		b.cond.Wait()
	}
	b.free -= n
	return nil
}

// resize changes a holding of from bytes to to bytes: it gives back the
// difference, or takes it, waiting (a holding larger than the budget is
// the whole budget). On an error the holding is still from bytes.
func (b *byteBudget) resize(ctx context.Context, from, to int64) error {
	from, to = min(from, b.limit), min(to, b.limit)
	switch {
	case to < from:
		b.release(from - to)
	case to > from:
		return b.acquire(ctx, to-from)
	}
	return nil
}

func (b *byteBudget) release(n int64) {
	n = min(n, b.limit)
	b.mu.Lock()
	b.free += n
	b.mu.Unlock()
	b.cond.Broadcast()
}
