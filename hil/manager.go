package hil

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/hil/hildb"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/wire"
)

// ErrClosed is returned by a Manager after Close.
var ErrClosed = errors.New("hil: manager closed")

// Defaults of Options and limits.
const (
	DefaultNotifyBackoff = time.Second
	DefaultNotifyTimeout = 10 * time.Second
	NotifyAttempts       = 3
	// MaxNotifyInFlight bounds notifications being delivered at once;
	// beyond it a notification is skipped (and audited as failed).
	MaxNotifyInFlight = 16
	// KeepClosed bounds the decided and closed requests kept in the store.
	KeepClosed = 10_000
	// pruneEvery is how often closed records are pruned.
	pruneEvery = time.Hour
	pruneBatch = 1000
	// retryEscalation is how long a failed escalation write waits before
	// it is tried again.
	retryEscalation = 5 * time.Second
)

// Options configure a Manager.
type Options struct {
	// Logger receives the manager's log; by default it logs nothing.
	Logger *slog.Logger
	// Transport sends notifications (each bounded by
	// DefaultNotifyTimeout). Default: the agent's.
	Transport transport.Transport
	// NotifyBackoff is the wait before the second notification attempt
	// (doubled for the third), on the agent's clock. Default 1 s.
	NotifyBackoff time.Duration
	// Config is the config file's "hil" section (the zero value: three
	// levels of five minutes, default action reject); New does not check
	// it: Config.Validate does.
	Config Config
	// CallbackSecret, if set, signs the notifications
	// (X-Synapse-Signature), as it signs webhook callbacks
	// (p2p.callback_secret_env).
	CallbackSecret string
}

// Manager runs the human-in-the-loop layer of one agent. Build it with New
// after the agent is open, Start it, and Close it before the agent.
type Manager struct {
	a         *agent.Agent
	db        *store.DB
	clock     agent.Clock
	log       *slog.Logger
	levels    []Level
	defAction string
	secret    []byte
	maxAge    time.Duration
	opts      Options
	t         transport.Transport
	feed      *feed

	mu      sync.Mutex
	pending map[string]*entry
	// ended are the waits whose request was decided or closed here, by
	// task id: its entered_at. A Sync that still sees such a task waiting
	// (its new state not yet in the agent's view) makes no new request;
	// an entry goes once the task is seen not waiting.
	ended  map[string]time.Time
	closed bool

	wg        sync.WaitGroup
	notifying chan struct{} // semaphore of notifications in flight
	stop      chan struct{}
	bg        context.Context
	cancelBg  context.CancelFunc
	startOnce sync.Once
	closeOnce sync.Once
}

// entry is a pending request in memory.
type entry struct {
	rec   *hildb.Request // replaced, never mutated in place
	timer agent.Timer
	// busy is set while a decision is being applied.
	busy bool
	// expired is set when the level's deadline passed while busy.
	expired bool
}

// New builds a manager for an open agent.
func New(a *agent.Agent, opts Options) *Manager {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.NotifyBackoff <= 0 {
		opts.NotifyBackoff = DefaultNotifyBackoff
	}
	t := opts.Transport
	if t == nil {
		t = a.Transport()
	}
	cfg := a.Config()
	m := &Manager{
		a: a, db: a.Store(), clock: a.Clock(), log: opts.Logger.With("component", "hil"),
		levels: opts.Config.EffectiveLevels(), defAction: opts.Config.EffectiveDefaultAction(),
		maxAge: time.Duration(cfg.Retention.MaxAgeHours) * time.Hour,
		opts:   opts, t: t,
		// Ids start above those of earlier processes (see Event).
		feed:    newFeed(uint64(max(a.Clock().Now().UnixMilli(), 0)) * 1000),
		pending: map[string]*entry{}, ended: map[string]time.Time{},
		notifying: make(chan struct{}, MaxNotifyInFlight),
		stop:      make(chan struct{}),
	}
	if s := opts.CallbackSecret; s != "" {
		m.secret = []byte(s)
	}
	m.bg, m.cancelBg = context.WithCancel(context.Background())
	return m
}

// Start loads the pending requests of an earlier run, takes in the tasks
// waiting now, arms the deadlines, and starts looking for new requests.
// The agent then declares the HILHandler interface, and
// EscalationHandler when there is more than one level.
func (m *Manager) Start(ctx context.Context) error {
	var err error
	m.startOnce.Do(func() {
		if err = m.load(); err != nil {
			return
		}
		changed := m.a.HumanChanged() // before Sync: no change is missed
		if err = m.Sync(ctx); err != nil {
			return
		}
		m.wg.Add(1)
		go m.loop(changed)
		ifaces := []string{wire.IfaceHILHandler}
		if len(m.levels) > 1 {
			ifaces = append(ifaces, wire.IfaceEscalationHandler)
		}
		err = m.a.ProvideInterfaces(ifaces...)
	})
	return err
}

// load puts the stored pending requests in memory.
func (m *Manager) load() error {
	after := ""
	for range 10_000 { // pages of 1000: bounded
		var page []*hildb.Request
		var next string
		err := m.db.View(func(tx *store.Tx) error {
			var err error
			page, next, err = hildb.Requests(tx, true, after, 1000)
			return err
		})
		if err != nil {
			return fmt.Errorf("hil: load pending requests: %w", err)
		}
		m.mu.Lock()
		for _, r := range page {
			m.pending[r.TaskID] = &entry{rec: r}
		}
		m.mu.Unlock()
		if next == "" {
			return nil
		}
		after = next
	}
	return nil
}

// loop takes in the tasks waiting for a person each time the agent says
// they changed (agent.Agent.HumanChanged), and prunes old records, until
// Close.
func (m *Manager) loop(changed <-chan struct{}) {
	defer m.wg.Done()
	prune := time.NewTicker(pruneEvery)
	defer prune.Stop()
	m.prune()
	for {
		select {
		case <-changed:
			changed = m.a.HumanChanged() // before Sync: no change is missed
			if err := m.Sync(m.bg); err != nil && !errors.Is(err, ErrClosed) {
				m.log.Error("look for requests", "err", err)
			}
		case <-prune.C:
			m.prune()
		case <-m.stop:
			return
		}
	}
}

func (m *Manager) prune() {
	cut := m.clock.Now().Add(-m.maxAge)
	for range 1000 { // bounded: each pass deletes up to pruneBatch
		var n int
		err := m.db.Update(m.bg, func(tx *store.Tx) error {
			var err error
			n, err = hildb.Prune(tx, cut, KeepClosed, pruneBatch)
			return err
		})
		if err != nil {
			if !errors.Is(err, store.ErrClosed) && !errors.Is(err, context.Canceled) {
				m.log.Error("prune requests", "err", err)
			}
			return
		}
		if n < pruneBatch {
			return
		}
	}
}

// Close stops the deadlines, the polling, the notifications and the
// streams, waiting for them until ctx is done. It is safe to call twice.
func (m *Manager) Close(ctx context.Context) error {
	var err error
	m.closeOnce.Do(func() {
		m.mu.Lock()
		m.closed = true
		for _, e := range m.pending {
			if e.timer != nil {
				e.timer.Stop()
			}
		}
		m.mu.Unlock()
		close(m.stop)
		m.cancelBg()
		m.feed.close()
		done := make(chan struct{})
		go func() { m.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			err = fmt.Errorf("hil: close: %w", ctx.Err())
		}
	})
	return err
}

// Subscribe delivers the events from now on. With resume, replay holds the
// events after the id after; ok is false when they are no longer all in
// memory, and the caller should reload the requests.
func (m *Manager) Subscribe(after uint64, resume bool) (sub *Subscription, replay []Event, ok bool) {
	return m.feed.subscribe(after, resume)
}

// CanView reports whether p may list and read requests: tasks:read or the
// reviewers scope of some level.
func (m *Manager) CanView(p auth.Principal) bool {
	if p.Can(auth.ScopeTasksRead) {
		return true
	}
	for _, l := range m.levels {
		if p.Can(l.ReviewersScope) {
			return true
		}
	}
	return false
}

// Pending returns the pending requests, the most urgent deadline first.
func (m *Manager) Pending() []*Request {
	m.mu.Lock()
	recs := make([]*hildb.Request, 0, len(m.pending))
	for _, e := range m.pending {
		recs = append(recs, e.rec)
	}
	m.mu.Unlock()
	slices.SortFunc(recs, func(x, y *hildb.Request) int {
		if c := x.Deadline.Compare(y.Deadline); c != 0 {
			return c
		}
		return cmp.Compare(x.TaskID, y.TaskID)
	})
	out := make([]*Request, len(recs))
	for i, r := range recs {
		out[i] = view(r, m.levels)
	}
	return out
}

// List returns stored requests of every state, newest task first, up to
// limit, continuing after the task id after; next is the id to continue
// after ("" at the end).
func (m *Manager) List(after string, limit int) (reqs []*Request, next string, err error) {
	var recs []*hildb.Request
	err = m.db.View(func(tx *store.Tx) error {
		var err error
		recs, next, err = hildb.Requests(tx, false, after, limit)
		return err
	})
	if err != nil {
		return nil, "", wire.Errorf(wire.CodeSysStorage, "list requests: %v", err)
	}
	m.mu.Lock()
	for i, r := range recs {
		if e := m.pending[r.TaskID]; e != nil && e.rec.EnteredAt.Equal(r.EnteredAt) {
			recs[i] = e.rec // memory is ahead while a write is queued
		}
	}
	m.mu.Unlock()
	reqs = make([]*Request, len(recs))
	for i, r := range recs {
		reqs[i] = view(r, m.levels)
	}
	return reqs, next, nil
}

// Get returns a task's request (pending or not) with its audit trail.
func (m *Manager) Get(ctx context.Context, id string) (*Request, error) {
	if err := m.Sync(ctx); err != nil {
		return nil, err
	}
	var rec *hildb.Request
	var steps []*hildb.Step
	err := m.db.View(func(tx *store.Tx) error {
		var err error
		if rec, err = hildb.GetRequest(tx, id); err != nil {
			return err
		}
		steps, err = hildb.Steps(tx, id)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, m.noRequest(id)
	}
	if err != nil {
		return nil, wire.Errorf(wire.CodeSysStorage, "read request: %v", err)
	}
	m.mu.Lock()
	if e := m.pending[id]; e != nil {
		rec = e.rec
	}
	m.mu.Unlock()
	v := view(rec, m.levels)
	for _, s := range steps {
		v.Steps = append(v.Steps, viewStep(s))
	}
	return v, nil
}

// noRequest is the error for a task without a request record.
func (m *Manager) noRequest(id string) error {
	if _, err := m.a.Task(id); err != nil {
		return err
	}
	return wire.Errorf(wire.CodeNotFound, "task %s has no request for a person", id).With("task_id", id)
}
