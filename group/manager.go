package group

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/group/groupdb"
	"github.com/synapse-edge/synapse/peer"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// Defaults of Options.
const (
	// DefaultKeepEvents is how many events of each group are kept.
	DefaultKeepEvents = 1000
	// subBuffer is how many events a subscriber may fall behind before it
	// is dropped (and reloads from the store).
	subBuffer = 256
	// closeWait bounds how long Close waits for its goroutines.
	closeWait = 10 * time.Second
)

// Options configure a Manager.
type Options struct {
	// Logger receives the manager's log; by default it logs nothing.
	Logger *slog.Logger
	// KeepEvents bounds each group's event log. Default DefaultKeepEvents.
	KeepEvents int
}

// Manager runs the groups of one agent: it is the GroupManager,
// VotingHandler and GroupTaskHandler of seed 000. Build it with New after
// the agent is open, Start it, and Close it before the agent.
type Manager struct {
	a     *agent.Agent
	net   *peer.Network
	db    *store.DB
	clock agent.Clock
	log   *slog.Logger
	me    string
	keep  int
	// maxAge is how long closed votes, finished group tasks and groups
	// left or disbanded are kept (retention.max_age_hours).
	maxAge time.Duration

	mu      sync.Mutex
	started bool
	closed  bool
	// timers close votes at their deadline, by group/vote id.
	timers map[string]agent.Timer
	// runs are the group tasks this agent coordinates, by group/task id.
	runs map[string]*taskRun
	subs map[string]map[*Subscription]struct{}

	wg        sync.WaitGroup
	bg        context.Context
	cancelBg  context.CancelFunc
	closeOnce sync.Once
}

// New builds a manager for an open agent and its peer network.
func New(a *agent.Agent, net *peer.Network, opts Options) *Manager {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.KeepEvents <= 0 {
		opts.KeepEvents = DefaultKeepEvents
	}
	m := &Manager{
		a: a, net: net, db: a.Store(), clock: a.Clock(), log: opts.Logger.With("component", "group"),
		me: a.Identity().AgentID, keep: opts.KeepEvents,
		maxAge: time.Duration(a.Config().Retention.MaxAgeHours) * time.Hour,
		timers: map[string]agent.Timer{}, runs: map[string]*taskRun{},
		subs: map[string]map[*Subscription]struct{}{},
	}
	m.bg, m.cancelBg = context.WithCancel(context.Background())
	return m
}

// Start takes the group:* messages of the agent, arms the deadlines of the
// open votes this agent coordinates, resumes its unfinished group tasks and
// starts retention (retention.go).
func (m *Manager) Start(ctx context.Context) error {
	m.mu.Lock()
	if m.started || m.closed {
		m.mu.Unlock()
		return nil
	}
	m.started = true
	m.mu.Unlock()
	if err := m.resumeVotes(ctx); err != nil {
		return fmt.Errorf("group: resume votes: %w", err)
	}
	if err := m.resumeTasks(ctx); err != nil {
		return fmt.Errorf("group: resume group tasks: %w", err)
	}
	if _, err := m.Prune(ctx); err != nil {
		return fmt.Errorf("group: prune: %w", err)
	}
	m.spawn(m.pruneLoop)
	m.net.Inbound().HandleGroupMessages(m.receive)
	if err := m.a.ProvideInterfaces(wire.IfaceGroupManager, wire.IfaceVotingHandler, wire.IfaceGroupTaskHandler); err != nil {
		return fmt.Errorf("group: %w", err)
	}
	return nil
}

// Close stops the vote timers and the group tasks' watchers (they resume
// at the next Start), ends the subscriptions, and waits for the manager's
// goroutines until ctx is done. It is safe to call more than once.
func (m *Manager) Close(ctx context.Context) error {
	var err error
	m.closeOnce.Do(func() {
		m.mu.Lock()
		m.closed = true
		for k, t := range m.timers {
			t.Stop()
			delete(m.timers, k)
		}
		runs := m.runs
		m.runs = map[string]*taskRun{}
		for _, set := range m.subs {
			for s := range set {
				s.detach()
			}
		}
		m.subs = map[string]map[*Subscription]struct{}{}
		m.mu.Unlock()
		for _, r := range runs {
			r.end()
		}
		m.cancelBg()
		done := make(chan struct{})
		go func() { m.wg.Wait(); close(done) }()
		ctx, cancel := context.WithTimeout(ctx, closeWait)
		defer cancel()
		select {
		case <-done:
		case <-ctx.Done():
			err = fmt.Errorf("group: close: %w", ctx.Err())
		}
	})
	return err
}

// spawn runs f on a tracked goroutine; after Close it does nothing.
func (m *Manager) spawn(f func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		f()
	}()
}

func (m *Manager) isClosed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closed
}

// now is the agent's time, UTC.
func (m *Manager) now() time.Time { return m.clock.Now().UTC() }

// ---- store access ----

// update runs fn in a write transaction. fn may run more than once: it
// must only read and write through tx and set its outputs anew each time.
func (m *Manager) update(ctx context.Context, fn func(tx *store.Tx) error) error {
	if m.isClosed() {
		return wire.Errorf(wire.CodeAgentNotReady, "groups are shutting down")
	}
	err := m.db.Update(ctx, fn)
	var we *wire.Error
	if err == nil || errors.As(err, &we) {
		return err
	}
	return wire.Errorf(wire.CodeSysStorage, "store groups: %v", err)
}

func (m *Manager) view(fn func(tx *store.Tx) error) error {
	err := m.db.View(fn)
	var we *wire.Error
	if err == nil || errors.As(err, &we) {
		return err
	}
	return wire.Errorf(wire.CodeSysStorage, "read groups: %v", err)
}

func getGroup(tx *store.Tx, id string) (*Group, error) {
	return getDoc[Group]("group", id, func() ([]byte, error) { return groupdb.Get(tx, id) })
}

func putGroup(tx *store.Tx, g *Group) error {
	return putDoc("group", g.GroupID, g, func(doc []byte) error { return groupdb.Put(tx, g.GroupID, doc) })
}

// getDoc reads a JSON record with read; a missing one is notFound(kind, id).
func getDoc[T any](kind, id string, read func() ([]byte, error)) (*T, error) {
	doc, err := read()
	if errors.Is(err, store.ErrNotFound) {
		return nil, notFound(kind, id)
	}
	if err != nil {
		return nil, err
	}
	v := new(T)
	if err := json.Unmarshal(doc, v); err != nil {
		return nil, fmt.Errorf("decode %s %s: %w", kind, id, err)
	}
	return v, nil
}

// putDoc writes v as JSON with write.
func putDoc(kind, id string, v any, write func([]byte) error) error {
	doc, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s %s: %w", kind, id, err)
	}
	return write(doc)
}

// Group reads a group as this agent knows it.
func (m *Manager) Group(id string) (*Group, error) {
	var g *Group
	err := m.view(func(tx *store.Tx) error {
		var err error
		g, err = getGroup(tx, id)
		return err
	})
	return g, err
}

// Groups lists the groups this agent knows (created, joined, invited to,
// left), by group id.
func (m *Manager) Groups() ([]*Group, error) {
	out := []*Group{}
	err := m.view(func(tx *store.Tx) error {
		return groupdb.Each(tx, func(id string, doc []byte) error {
			g := new(Group)
			if err := json.Unmarshal(doc, g); err != nil {
				return fmt.Errorf("decode group %s: %w", id, err)
			}
			out = append(out, g)
			return nil
		})
	})
	return out, err
}

// Members lists a group's members.
func (m *Manager) Members(id string) ([]Member, error) {
	g, err := m.Group(id)
	if err != nil {
		return nil, err
	}
	if g.Members == nil {
		return []Member{}, nil
	}
	return g.Members, nil
}

// ---- sending ----

// announce queues an envelope for every member of g but this agent and
// those in except. Members that are no longer paired are skipped (and
// logged): they cannot receive it.
func (m *Manager) announce(tx *store.Tx, g *Group, msgType wire.MessageType, payload any, except ...string) error {
	for _, mb := range g.Members {
		if mb.AgentID == m.me || contains(except, mb.AgentID) {
			continue
		}
		if err := m.send(tx, mb.AgentID, msgType, payload); err != nil {
			return err
		}
	}
	return nil
}

// send queues one envelope for a peer; an unpaired peer is skipped.
func (m *Manager) send(tx *store.Tx, peer string, msgType wire.MessageType, payload any) error {
	if _, err := m.net.Pairing().Peer(peer); err != nil {
		m.log.Warn("not sent: the agent is not a paired peer", "peer", peer, "type", msgType)
		return nil
	}
	return m.net.QueueToPeer(tx, peer, msgType, payload)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// ---- events ----

// record appends an event to a group's log in tx; subscribers get it once
// tx commits. A repeated event id is not recorded twice.
func (m *Manager) record(tx *store.Tx, groupID, eventID string, typ wire.MessageType, from string, payload any) error {
	_, err := m.recordNew(tx, groupID, eventID, typ, from, payload)
	return err
}

// recordNew is record that reports whether the event id was recorded
// before (dup).
func (m *Manager) recordNew(tx *store.Tx, groupID, eventID string, typ wire.MessageType, from string, payload any) (dup bool, err error) {
	raw, err := json.Marshal(payload)
	if err != nil {
		return false, fmt.Errorf("encode %s event: %w", typ, err)
	}
	ev := Event{EventID: eventID, GroupID: groupID, Type: typ, From: from, At: wire.Time{Time: m.now()}, Payload: raw}
	_, dup, err = groupdb.AppendEvent(tx, groupID, eventID, m.keep, func(seq uint64) ([]byte, error) {
		ev.Seq = seq
		return json.Marshal(&ev)
	})
	if err != nil || dup {
		return dup, err
	}
	tx.OnCommit(func() { m.publish(ev) })
	return false, nil
}

// Events returns up to limit events of a group with seq > after.
func (m *Manager) Events(groupID string, after uint64, limit int) ([]Event, error) {
	if _, err := m.Group(groupID); err != nil {
		return nil, err
	}
	var recs []groupdb.Event
	if err := m.view(func(tx *store.Tx) error {
		var err error
		recs, err = groupdb.Events(tx, groupID, after, limit)
		return err
	}); err != nil {
		return nil, err
	}
	out := make([]Event, 0, len(recs))
	for _, r := range recs {
		var ev Event
		if err := json.Unmarshal(r.Doc, &ev); err != nil {
			return nil, wire.Errorf(wire.CodeSysStorage, "decode group event %d: %v", r.Seq, err)
		}
		out = append(out, ev)
	}
	return out, nil
}

// Subscription receives a group's events as they are recorded.
type Subscription struct {
	// C delivers events in order; it is closed when the reader fell too
	// far behind (Lagged is then true), on Close, or when the manager
	// closes.
	C       <-chan Event
	c       chan Event
	m       *Manager
	groupID string
	lagged  bool
	once    sync.Once
}

// Subscribe delivers a group's future events; read Events after
// subscribing to catch up without a gap.
func (m *Manager) Subscribe(groupID string) *Subscription {
	c := make(chan Event, subBuffer)
	s := &Subscription{C: c, c: c, m: m, groupID: groupID}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		s.detach()
		return s
	}
	set := m.subs[groupID]
	if set == nil {
		set = map[*Subscription]struct{}{}
		m.subs[groupID] = set
	}
	set[s] = struct{}{}
	return s
}

// Close stops delivery.
func (s *Subscription) Close() {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	if set := s.m.subs[s.groupID]; set != nil {
		delete(set, s)
		if len(set) == 0 {
			delete(s.m.subs, s.groupID)
		}
	}
	s.detach()
}

// Lagged reports whether C was closed because the reader was too slow.
func (s *Subscription) Lagged() bool {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	return s.lagged
}

// detach closes C once; m.mu is held (or s was never registered).
func (s *Subscription) detach() { s.once.Do(func() { close(s.c) }) }

// publish hands ev to the group's subscribers; it never blocks (the
// store's writer calls it).
func (m *Manager) publish(ev Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for s := range m.subs[ev.GroupID] {
		select {
		case s.c <- ev:
		default:
			s.lagged = true
			delete(m.subs[ev.GroupID], s)
			s.detach()
		}
	}
}

// ---- inbound ----

// receive handles a checked group:* envelope from the paired peer from.
func (m *Manager) receive(ctx context.Context, from string, msg *wire.UnifiedSynapseMessage) error {
	if m.isClosed() {
		return wire.Errorf(wire.CodeAgentNotReady, "groups are shutting down")
	}
	bad := func(err error) error {
		return wire.Errorf(wire.CodeMessageFormatInvalid, "%s payload: %v", msg.MessageType, err)
	}
	switch msg.MessageType {
	case wire.MsgGroupInvite, wire.MsgGroupJoin, wire.MsgGroupLeave, wire.MsgGroupDisband:
		var p memberPayload
		if err := msg.Payload.Decode(&p); err != nil {
			return bad(err)
		}
		return m.memberMessage(ctx, from, msg.MessageType, &p)
	case wire.MsgGroupVoteOpen, wire.MsgGroupVoteResult:
		var p votePayload
		if err := msg.Payload.Decode(&p); err != nil || p.Vote == nil {
			return bad(errors.Join(err, errors.New("vote is required")))
		}
		return m.voteMessage(ctx, from, msg.MessageType, p.Vote)
	case wire.MsgGroupBallot:
		var p ballotPayload
		if err := msg.Payload.Decode(&p); err != nil {
			return bad(err)
		}
		_, err := m.castAtOwner(ctx, from, p.GroupID, p.VoteID, p.BallotRequest)
		return err
	case wire.MsgGroupMessage:
		var p Message
		if err := msg.Payload.Decode(&p); err != nil {
			return bad(err)
		}
		return m.messageFrom(ctx, from, &p)
	case wire.MsgGroupTask, wire.MsgGroupTaskResult:
		var p taskPayload
		if err := msg.Payload.Decode(&p); err != nil || p.Task == nil {
			return bad(errors.Join(err, errors.New("task is required")))
		}
		return m.taskMessage(ctx, from, msg.MessageType, p.Task)
	}
	return wire.Errorf(wire.CodeMessageFormatInvalid, "unknown group message type %q", msg.MessageType)
}

// ownerOf reads who owns a group, "" when this agent does not know it.
func (m *Manager) ownerOf(groupID string) string {
	g, err := m.Group(groupID)
	if err != nil {
		return ""
	}
	return g.Owner
}

// fromOwner checks that an announcement comes from the group's owner.
func fromOwner(g *Group, from string, msgType wire.MessageType) error {
	if g.Owner != from {
		return denied("%s for group %s must come from its owner %s, not %s", msgType, g.GroupID, g.Owner, from)
	}
	return nil
}

// LastEvent is the seq of a group's newest event on this agent (0 when
// none).
func (m *Manager) LastEvent(groupID string) uint64 {
	var n uint64
	_ = m.db.View(func(tx *store.Tx) error {
		n = groupdb.LastEvent(tx, groupID)
		return nil
	})
	return n
}
