package agent

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/synapse-edge/synapse/agent/idemdb"
	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/internal/clock"
	"github.com/synapse-edge/synapse/internal/metrics"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/transport/outbound"
	"github.com/synapse-edge/synapse/wire"
)

// Agent is one Synapse agent: its identity, its store and its task engine.
// Use New, register handlers, Open, and Close when done.
type Agent struct {
	// cfg is the configuration in force; Reconfigure swaps it.
	cfg      atomic.Pointer[Config]
	log      *slog.Logger
	clock    Clock
	handlers handlers
	// caps holds the standard interfaces provided (capabilities.go).
	caps capabilityState

	db       *store.DB
	key      ed25519.PrivateKey
	identity wire.Identity
	tokens   auth.Tokens
	eng      *engine
	started  time.Time
	// net is the attached peer network, nil without one (network.go).
	net Network
	// t1 is Options.Tier1, nil without.
	t1 Tier1
	// outbound is the policy of client-given URLs (package outbound).
	outbound *outbound.Policy
	// transport sends what the agent sends (transport.go); ownTransport
	// is set when it is the default, which Close closes.
	transport    transport.Transport
	ownTransport bool

	m       agentMetrics
	metrics *metrics.Registry

	sweepStop chan struct{}
	sweepDone chan struct{}
	closeOnce sync.Once
	closeErr  error
	// closing is set when Close begins (health.go).
	closing atomic.Bool
	// storeFault is Options.StoreFault.
	storeFault, storeSyncFault func() error
	// idem holds the idempotency keys being answered (idempotency.go).
	idem idemdb.Flights
}

type agentMetrics struct {
	submitted *metrics.Counter
	rejected  *metrics.Counter
	finished  *metrics.CounterVec
	active    *metrics.Gauge
	pruned    *metrics.Counter
}

// Options are what New builds an agent with besides its Config: the
// things it works with, not values of the config file. The zero value is
// an agent that logs nothing, reads the wall clock and sends over HTTP.
type Options struct {
	// Logger receives the agent's logs; nil: the agent logs nothing.
	Logger *slog.Logger
	// Clock replaces the wall clock (tests); nil: the wall clock.
	Clock Clock
	// Transport is what the agent and the layers built on it send
	// through (tier-1 batches, notifications, the peer network's
	// envelopes): the command's network wires (package
	// transport/netwire: HTTP and WebSocket). nil: a Mux of the agent's
	// own with no wire until AddWire adds one; a destination no wire
	// serves is refused ("no transport for "http" destinations"), so an
	// agent embedded without wires runs its local tasks and sends
	// nothing.
	Transport transport.Transport
	// Outbound, if set, is the policy of URLs a client gave (callback
	// URLs): the one the command's HTTP wire dials them through. nil:
	// built from the configuration's outbound section.
	Outbound *outbound.Policy
	// StoreFault, if set, is called before every commit of the store; an
	// error from it fails that commit as a failing disk would (fault
	// injection for tests, like bbolt's failpoints).
	StoreFault func() error
	// StoreSyncFault, if set, is store.Options.SyncFault: an error it
	// returns fails a commit after it reached the file (a phantom write).
	StoreSyncFault func() error
	// Tier1, if set, is tier 1 (package tier1's Service): opened and
	// pruned with the agent, its routines offered in negotiations. nil:
	// the agent offers no tier 1.
	Tier1 Tier1
}

// New builds an agent from a validated configuration. It has no handlers
// yet: add them with Handle before Open (package handlers registers the
// built-in and configured ones).
func New(cfg Config, opts Options) (*Agent, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	a := &Agent{log: slog.New(slog.DiscardHandler), clock: clock.Real{}, metrics: metrics.New()}
	a.cfg.Store(&cfg)
	var err error
	if a.outbound = opts.Outbound; a.outbound == nil {
		if a.outbound, err = outbound.New(cfg.Outbound, cfg.Listen); err != nil {
			return nil, fmt.Errorf("config: outbound.allow: %w", err)
		}
	}
	if opts.Logger != nil {
		a.log = opts.Logger
	}
	if opts.Clock != nil {
		a.clock = opts.Clock
	}
	a.transport, a.storeFault, a.storeSyncFault, a.t1 = opts.Transport, opts.StoreFault, opts.StoreSyncFault, opts.Tier1
	if a.transport == nil {
		a.transport, a.ownTransport = transport.NewMux(), true
	}
	r := a.metrics
	a.m = agentMetrics{
		submitted: r.Counter("synapse_tasks_submitted_total", "Tasks accepted and stored."),
		rejected:  r.Counter("synapse_tasks_rejected_total", "Tasks refused because max_concurrent_tasks was reached (4004)."),
		finished:  r.CounterVec("synapse_tasks_finished_total", "Tasks that reached a final state, by state.", "status"),
		active:    r.Gauge("synapse_tasks_active", "Tasks holding an execution slot."),
		pruned:    r.Counter("synapse_tasks_pruned_total", "Finished tasks deleted by retention."),
	}
	return a, nil
}

// Handle registers a Go handler for a task type.
func (a *Agent) Handle(h Handler) error {
	if err := a.handlers.add(h); err != nil {
		return err
	}
	a.caps.changed()
	return nil
}

// Open opens the data directory (failing with store.ErrLocked if another
// process serves it), loads or creates the identity and admin token, and
// takes over unfinished tasks.
func (a *Agent) Open(ctx context.Context) error {
	cfg := a.cfg.Load()
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	opts := cfg.Store.Options()
	opts.Logger, opts.Fault, opts.SyncFault = a.log.With("component", "store"), a.storeFault, a.storeSyncFault
	db, err := store.Open(ctx, filepath.Join(cfg.DataDir, store.FileName), opts)
	if err != nil {
		return err
	}
	a.db = db
	fail := func(err error) error {
		_ = db.Close(context.Background())
		return err
	}
	if err := a.loadIdentity(ctx); err != nil {
		return fail(err)
	}
	admin, err := a.loadAdminToken()
	if err != nil {
		return fail(err)
	}
	if err := a.tokens.Load(db, admin, a.clock.Now); err != nil {
		return fail(fmt.Errorf("load tokens: %w", err))
	}
	a.registerStoreMetrics()
	if a.t1 != nil {
		if err := a.t1.Open(ctx, db, a.metrics); err != nil {
			return fail(err)
		}
	}
	if a.net != nil {
		if err := a.net.Open(ctx); err != nil {
			return fail(err)
		}
	}
	a.eng = newEngine(a)
	if err := a.eng.loadPushIndex(); err != nil {
		return fail(fmt.Errorf("load push configs: %w", err))
	}
	n, err := a.eng.recover(ctx)
	if err != nil {
		return fail(fmt.Errorf("recover tasks: %w", err))
	}
	a.provideCoreInterfaces()
	if a.net != nil {
		a.net.Start()
	}
	if n > 0 {
		a.log.Info("took over unfinished tasks", "count", n)
	}
	a.started = a.clock.Now()
	a.sweepStop, a.sweepDone = make(chan struct{}), make(chan struct{})
	go a.sweep()
	a.log.Info("agent open", "agent_id", a.identity.AgentID, "data", a.cfg.Load().DataDir)
	return nil
}

// Close stops admitting tasks, lets running ones finish until ctx is done
// (the rest stay executing for the next start), and closes the store. It is
// safe to call more than once.
func (a *Agent) Close(ctx context.Context) error {
	a.closing.Store(true)
	a.closeOnce.Do(func() {
		if a.eng == nil {
			return
		}
		a.eng.shutdown(ctx)
		if a.net != nil {
			a.net.Close(ctx)
		}
		close(a.sweepStop)
		<-a.sweepDone
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		a.closeTransport()
		a.closeErr = a.db.Close(cctx)
	})
	return a.closeErr
}

// Config is the agent's configuration in force: the one New was given,
// with the live values of the last Reconfigure.
func (a *Agent) Config() Config { return *a.cfg.Load() }

// Reconfigure makes next, valid (Validate), the configuration in force
// at once: every request sees the old one or next, never a mix. Only the
// fields the agent reads at each use take effect on a running agent —
// max_concurrent_tasks (new admissions; requests already waiting for a
// slot see it when one frees or when they time out), max_task_duration_
// seconds (tasks started after), max_parked_tasks and approvals; the others were
// read when the agent was built or opened, so next must keep their
// values there (package cli/reload does, and reports the changed ones as
// needing a restart).
func (a *Agent) Reconfigure(next Config) { a.cfg.Store(&next) }

// Clock is the agent's clock (the wall clock unless Options.Clock replaced it).
func (a *Agent) Clock() Clock { return a.clock }

// Identity is the agent's public identity.
func (a *Agent) Identity() wire.Identity { return a.identity }

// Uptime is the time since Open.
func (a *Agent) Uptime() time.Duration { return a.clock.Now().Sub(a.started) }

// Metrics is the agent's metrics registry; the HTTP layer adds its own.
func (a *Agent) Metrics() *metrics.Registry { return a.metrics }

// Store is the agent's store, for the HTTP layer's idempotency records,
// backups and checks.
func (a *Agent) Store() *store.DB { return a.db }

// SupportsTaskType reports whether a handler is registered for taskType.
func (a *Agent) SupportsTaskType(taskType string) bool { return a.handlers.get(taskType) != nil }

// SubmitOptions are how Submit answers a request.
type SubmitOptions struct {
	// Wait, when above zero, is the sync mode: Submit returns the task
	// once it is final, or after Wait. For idempotent handlers that finish
	// at once the task is stored only once, already final (see inline.go).
	Wait time.Duration
	// Idempotency, when not nil, is the request's idempotency key
	// (idempotency.go): the task is stored with its key in one
	// transaction, and a request made again with the key is answered by
	// the task as the first request was.
	Idempotency *IdemRequest
}

// Submitted is what Submit answers: the task, as the request is to be
// answered.
type Submitted struct {
	// Task is the task: after the wait in the sync mode; with a key, the
	// task as it was stored with the key (after the wait when it was then
	// final), for a replay the first request's. Nil only when Sent is set.
	*wire.Task
	// Replayed is true when the key's answer was stored before: no task
	// was created.
	Replayed bool
	// Sent is set instead of Task for a replay of a key stored before
	// the store kept submits' tasks: the answer as it was sent, which the
	// API sends again as it is (such records expire after IdempotencyTTL).
	Sent *IdemAnswer
}

// Submit validates and stores a task and starts it; the one submit of
// every API (REST, gRPC, A2A, group parts). A payload that lacks required
// fields is stored in info_needed.
func (a *Agent) Submit(ctx context.Context, p auth.Principal, req *wire.SubmitRequest, o SubmitOptions) (*Submitted, error) {
	if o.Idempotency != nil {
		return a.submitIdempotent(ctx, p, req, *o.Idempotency, o.Wait)
	}
	t, err := a.eng.submitWith(ctx, p, req, nil, o.Wait)
	if err != nil {
		return nil, err
	}
	return &Submitted{Task: t}, nil
}

// Task reads a task.
func (a *Agent) Task(id string) (*wire.Task, error) { return a.eng.get(id) }

// Wait returns the task once it is final, or after d.
func (a *Agent) Wait(ctx context.Context, id string, d time.Duration) (*wire.Task, error) {
	return a.eng.wait(ctx, id, d)
}

// Cancel cancels a task; cancelling a cancelled task is not an error.
func (a *Agent) Cancel(ctx context.Context, id string) (*wire.Task, error) {
	return a.eng.cancel(ctx, id)
}

// ProvideInfo supplies fields a task in info_needed asked for.
func (a *Agent) ProvideInfo(ctx context.Context, id string, fields wire.JSONValue) (*wire.Task, error) {
	return a.eng.provideInfo(ctx, id, fields)
}

// ListTasks lists tasks newest first.
func (a *Agent) ListTasks(f TaskFilter) ([]*wire.Task, string, error) {
	return a.eng.list(store.TaskFilter(f))
}

// Events returns a task's stored events with seq > after.
func (a *Agent) Events(id string, after uint64) ([]*wire.Event, error) {
	return a.eng.events(id, after)
}

// Subscribe delivers a task's future events; combine with Events to resume.
func (a *Agent) Subscribe(id string) *Subscription { return a.eng.hub.Subscribe(id) }

// Done returns a channel closed when the agent is shutting down.
func (a *Agent) Done() <-chan struct{} { return a.sweepStop }

// Pruning runs every sweepEvery (a burst grows the file by seconds of writes), deleting
// at most pruneBatch records per transaction so it never holds the writer for long.
const (
	sweepEvery = 5 * time.Second
	pruneBatch = 1000
	idemTTL    = 24 * time.Hour
)

// IdempotencyTTL is how long idempotency records are kept (SPEC §5.3).
const IdempotencyTTL = idemTTL

func (a *Agent) sweep() {
	defer close(a.sweepDone)
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		if _, err := a.Prune(context.Background()); err != nil && !errors.Is(err, store.ErrClosed) {
			a.log.Error("retention", "err", err)
		}
		select {
		case <-t.C:
		case <-a.sweepStop:
			return
		}
	}
}

// Prune applies retention once: finished tasks beyond the configured age and
// count, tier 1's (Options.Tier1) and the network's, and idempotency
// records older than 24 h. It returns the number of tasks deleted.
func (a *Agent) Prune(ctx context.Context) (int, error) {
	now := a.clock.Now()
	total := 0
	for {
		var n int
		err := a.db.Update(ctx, func(tx *store.Tx) (err error) {
			n, err = tx.PruneFinished(now.Add(-time.Duration(a.cfg.Load().Retention.MaxAgeHours)*time.Hour), a.cfg.Load().Retention.KeepFinished, pruneBatch)
			return err
		})
		if err != nil {
			return total, err
		}
		total += n
		a.m.pruned.Add(uint64(n))
		if n < pruneBatch {
			break
		}
	}
	if a.t1 != nil {
		if err := a.t1.Prune(ctx, now); err != nil {
			return total, err
		}
	}
	if a.net != nil {
		if err := a.net.Prune(ctx); err != nil {
			return total, err
		}
	}
	for {
		var n int
		err := a.db.Update(ctx, func(tx *store.Tx) (err error) {
			n, err = idemdb.Prune(tx, now.Add(-idemTTL), pruneBatch)
			return err
		})
		if err != nil || n < pruneBatch {
			return total, err
		}
	}
}

func (a *Agent) registerStoreMetrics() {
	r := a.metrics
	a.db.RegisterMetrics(r)
	metrics.RegisterRuntime(r)
	r.GaugeFunc("synapse_uptime_seconds", "Seconds since the agent opened.", func() float64 { return a.Uptime().Seconds() })
}
