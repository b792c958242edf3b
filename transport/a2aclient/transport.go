package a2aclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/synapse-edge/synapse/a2a"
	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/transport/httptransport"
	"github.com/synapse-edge/synapse/wire"
	"github.com/synapse-edge/synapse/wire/encrypt"
)

// Reporter applies what a peer reports of a task this agent delegated to
// it, as if the peer had sent the message (msgType is one of the p2p:task_*
// reports, payload its payload). Reports are idempotent: a repeated or
// late one has no second effect.
type Reporter interface {
	ReportFromPeer(ctx context.Context, peer string, msgType wire.MessageType, payload wire.RawPayload) error
}

// Options configure a Transport.
type Options struct {
	// Reporter receives the remote tasks' states (required).
	Reporter Reporter
	// Wire carries the JSON-RPC requests (transport.Request messages to
	// the endpoint's http or https URL). Default: an HTTP transport with
	// a 30 s timeout per request.
	Wire transport.Transport
	// Token returns the bearer token for a peer's A2A endpoint ("" for
	// none). A message's own Authorization header wins.
	Token func(peer string) string
	// PollMin and PollMax bound the wait between two reads of a remote
	// task (defaults 10 ms and 2 s); the wait doubles while nothing
	// changes.
	PollMin, PollMax time.Duration
	// Logger (nil: nothing is logged).
	Logger *slog.Logger
}

// Transport sends envelopes to A2A endpoints and tracks the tasks it
// delegated there (see the package doc). It may be registered (on a
// transport.Mux) before Start; until Start gives it its store, Send
// answers Retry. Close stops the tracking.
type Transport struct {
	rep      Reporter
	c        *client
	stream   *http.Client // subscriptions (follow.go)
	token    func(string) string
	min, max time.Duration
	log      *slog.Logger

	mu       sync.Mutex
	ledger   Ledger // set by Start
	ctx      context.Context
	cancel   context.CancelFunc
	closed   bool
	watching map[string]chan struct{} // local task id → kick
	wg       sync.WaitGroup
}

var _ transport.Transport = (*Transport)(nil)

// ErrNotStarted is the reason of a Send before Start.
var ErrNotStarted = errors.New("a2aclient: the transport is not started")

// New makes a Transport; Start starts it.
func New(o Options) (*Transport, error) {
	if o.Reporter == nil {
		return nil, errors.New("a2aclient: Options.Reporter is required")
	}
	if o.Wire == nil {
		o.Wire = httptransport.New(httptransport.Options{Timeout: 30 * time.Second})
	}
	if o.PollMin <= 0 {
		o.PollMin = 10 * time.Millisecond
	}
	if o.PollMax < o.PollMin {
		o.PollMax = max(2*time.Second, o.PollMin)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Transport{rep: o.Reporter, c: &client{wire: o.Wire}, stream: streamClient(), token: o.Token,
		min: o.PollMin, max: o.PollMax, log: o.Logger.With("component", "a2aclient"),
		ctx: ctx, cancel: cancel, watching: map[string]chan struct{}{}}, nil
}

// Ledger keeps, durably, the remote tasks the transport tracks, and
// reads the local tasks they stand for; the agent's is a2a.Ledger, over
// its store. What Send reports as delivered is in it first.
type Ledger interface {
	// RemoteTasks lists every record.
	RemoteTasks() ([]*a2a.RemoteTask, error)
	// RemoteTask reads the record of a local task; nil, nil when none.
	RemoteTask(taskID string) (*a2a.RemoteTask, error)
	// PutRemoteTask writes r durably, replacing the record of its task.
	PutRemoteTask(ctx context.Context, r *a2a.RemoteTask) error
	// DeleteRemoteTask deletes the record of a local task (none: no error).
	DeleteRemoteTask(ctx context.Context, taskID string) error
	// LocalTask reads a local task; nil, nil when there is none.
	LocalTask(taskID string) (*wire.Task, error)
}

// Start gives the transport the ledger where it keeps the remote tasks
// it tracks, and resumes tracking those kept there.
func (t *Transport) Start(ctx context.Context, l Ledger) error {
	if l == nil {
		return errors.New("a2aclient: Start needs the ledger of the tracked tasks")
	}
	all, err := l.RemoteTasks()
	if err != nil {
		return fmt.Errorf("a2aclient: read the tracked tasks: %w", err)
	}
	t.mu.Lock()
	t.ledger = l
	t.mu.Unlock()
	for _, r := range all {
		t.watch(r, nil)
	}
	return nil
}

// tracked is the ledger given to Start; nil before, and once closed.
func (t *Transport) tracked() Ledger {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	return t.ledger
}

// Close stops tracking and waits for the trackers (at most until ctx is
// done). It is safe to call twice; Send answers Retry afterwards.
func (t *Transport) Close(ctx context.Context) error {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.cancel()
	done := make(chan struct{})
	go func() { t.wg.Wait(); close(done) }()
	select {
	case <-done:
		t.stream.CloseIdleConnections()
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Send delivers one envelope (see the package doc for what each type
// becomes).
func (t *Transport) Send(ctx context.Context, m *transport.Message) transport.Outcome {
	if m.Kind != transport.Envelope {
		return transport.Refused(fmt.Errorf("a2a_jsonrpc carries envelopes, not %s messages", m.Kind))
	}
	url, err := endpoint(m.To)
	if err != nil {
		return transport.Refused(err)
	}
	env, err := wire.DecodeEnvelopeJSON(m.Body)
	if err != nil {
		return transport.Refused(fmt.Errorf("envelope: %w", err))
	}
	if strings.HasPrefix(env.ContentType, encrypt.ContentEncrypted) {
		return transport.Refused(errors.New("a2a_jsonrpc cannot carry an encrypted payload"))
	}
	l := t.tracked()
	if l == nil {
		return transport.Outcome{Class: transport.Retry, Err: fmt.Errorf("%w: %v", transport.ErrNotDelivered, ErrNotStarted)}
	}
	peer := env.Receiver.AgentID
	token := m.Header[transport.HeaderAuthorization]
	if token == "" && t.token != nil {
		if tk := t.token(peer); tk != "" {
			token = "Bearer " + tk
		}
	}
	d := delivery{t: t, ledger: l, url: url, to: m.To, token: token, peer: peer, env: env}
	switch env.MessageType {
	case wire.MsgTaskRequest:
		return d.request(ctx)
	case wire.MsgTaskCancel:
		return d.cancelTask(ctx)
	case wire.MsgTaskInfoProvided:
		return d.infoProvided(ctx)
	case wire.MsgTaskAck:
		return transport.Outcome{Class: transport.Delivered}
	}
	return transport.Refused(fmt.Errorf("%s has no A2A counterpart", env.MessageType))
}

// delivery is one envelope being sent.
type delivery struct {
	t                    *Transport
	ledger               Ledger
	url, to, token, peer string
	env                  *wire.UnifiedSynapseMessage
}

func (d *delivery) request(ctx context.Context) transport.Outcome {
	var p wire.TaskRequestPayload
	if err := d.env.Payload.Decode(&p); err != nil || p.Task.ID == "" || p.Task.Type == "" {
		return transport.Refused(fmt.Errorf("p2p:task_request payload: task.id and task.type are required (%v)", err))
	}
	if r, err := d.ledger.RemoteTask(p.Task.ID); err != nil {
		return transport.Outcome{Class: transport.Retry, Err: fmt.Errorf("%w: %v", transport.ErrNotDelivered, err)}
	} else if r != nil {
		return transport.Outcome{Class: transport.Delivered} // sent before
	}
	msg := &a2a.Message{MessageID: d.env.MessageID, Role: "ROLE_USER",
		Parts:    []a2a.Part{a2a.DataPart(object(p.Task.Payload), a2a.V10)},
		Metadata: map[string]any{"task_type": p.Task.Type}}
	var res sendResult
	o, _ := d.t.c.rpc(ctx, d.url, d.token, d.env.MessageID, "SendMessage",
		&a2a.SendParams{Message: msg, Configuration: &a2a.SendConfiguration{ReturnImmediately: true}}, &res)
	if !o.Delivered() {
		return o
	}
	switch {
	case res.Task != nil && res.Task.ID != "":
		r := &a2a.RemoteTask{TaskID: p.Task.ID, Peer: d.peer, URL: d.to, RemoteID: res.Task.ID, CreatedAt: time.Now().UTC()}
		if err := d.ledger.PutRemoteTask(ctx, r); err != nil {
			// The peer runs it; sent again, it may run twice.
			return transport.Outcome{Class: transport.Retry, Err: fmt.Errorf("%w: keep remote task %s: %v", transport.ErrNotDelivered, res.Task.ID, err)}
		}
		d.t.watch(r, res.Task)
		return o
	case res.Message != nil:
		// An agent that answers with a message has done the task.
		err := d.t.report(ctx, d.peer, p.Task.ID, &a2a.Task{ID: p.Task.ID,
			Status:    a2a.TaskStatus{State: "TASK_STATE_COMPLETED"},
			Artifacts: []a2a.Artifact{{ArtifactID: a2a.ResultArtifactID, Parts: res.Message.Parts}}})
		if err != nil {
			return transport.Outcome{Class: transport.Retry, Err: fmt.Errorf("%w: report the answer: %v", transport.ErrNotDelivered, err)}
		}
		return o
	}
	return transport.Outcome{Class: transport.Retry, Status: o.Status,
		Err: fmt.Errorf("%w: SendMessage answered neither a task nor a message", transport.ErrNotDelivered)}
}

func (d *delivery) cancelTask(ctx context.Context) transport.Outcome {
	var p wire.TaskCancelPayload
	if err := d.env.Payload.Decode(&p); err != nil || p.TaskID == "" {
		return transport.Refused(fmt.Errorf("p2p:task_cancel payload: task_id is required (%v)", err))
	}
	r, err := d.ledger.RemoteTask(p.TaskID)
	if err != nil {
		return transport.Outcome{Class: transport.Retry, Err: fmt.Errorf("%w: %v", transport.ErrNotDelivered, err)}
	}
	if r == nil {
		return d.cancelUntracked(p.TaskID)
	}
	o := d.t.c.call(ctx, d.url, d.token, "CancelTask", &a2a.TaskIDParams{ID: r.RemoteID}, nil)
	if !o.Delivered() && o.Error != nil && o.Status == http.StatusOK {
		// Not cancelable (final already) or unknown: the tracker reports
		// what the task became.
		o = transport.Outcome{Class: transport.Delivered, Status: o.Status}
	}
	d.t.kick(p.TaskID)
	return o
}

// cancelUntracked answers a cancel of a task that has no tracking record:
// either its request has not reached the peer yet (the outbox sends a
// window of messages at once), and the cancel is retried after it, or its
// tracking ended: the final report was applied before the record was
// deleted, so the local task is final (or pruned since, or no longer the
// peer's) and nothing is left to cancel. The store says which, so the
// answer is the same after a restart: such a cancel is never retried
// until it is dead-lettered.
func (d *delivery) cancelUntracked(taskID string) transport.Outcome {
	task, err := d.ledger.LocalTask(taskID)
	switch {
	case err != nil:
		return transport.Outcome{Class: transport.Retry, Err: fmt.Errorf("%w: %v", transport.ErrNotDelivered, err)}
	case task == nil:
		return transport.Outcome{Class: transport.Delivered}
	case task.Status.Terminal() || task.Target != d.peer:
		return transport.Outcome{Class: transport.Delivered}
	}
	return transport.Outcome{Class: transport.Retry, RetryAfter: time.Second,
		Err: fmt.Errorf("%w: task %s is not at %s yet", transport.ErrNotDelivered, taskID, d.peer)}
}

func (d *delivery) infoProvided(ctx context.Context) transport.Outcome {
	var p wire.TaskInfoProvidedPayload
	if err := d.env.Payload.Decode(&p); err != nil || p.TaskID == "" {
		return transport.Refused(fmt.Errorf("p2p:task_info_provided payload: task_id is required (%v)", err))
	}
	r, err := d.ledger.RemoteTask(p.TaskID)
	if err != nil {
		return transport.Outcome{Class: transport.Retry, Err: fmt.Errorf("%w: %v", transport.ErrNotDelivered, err)}
	}
	if r == nil {
		return transport.Refused(fmt.Errorf("task %s is not waiting on %s", p.TaskID, d.peer))
	}
	msg := &a2a.Message{MessageID: d.env.MessageID, Role: "ROLE_USER", TaskID: r.RemoteID,
		Parts: []a2a.Part{a2a.DataPart(object(p.Fields), a2a.V10)}}
	o := d.t.c.call(ctx, d.url, d.token, "SendMessage",
		&a2a.SendParams{Message: msg, Configuration: &a2a.SendConfiguration{ReturnImmediately: true}}, nil)
	d.t.kick(p.TaskID)
	return o
}

// object makes a payload a JSON object: objects as they are, anything
// else (or nothing) as {"value": ...}.
func object(v wire.JSONValue) json.RawMessage {
	if v.IsObject() {
		return json.RawMessage(v)
	}
	if len(v) == 0 {
		return json.RawMessage("{}")
	}
	b, _ := json.Marshal(map[string]json.RawMessage{"value": json.RawMessage(v)})
	return b
}
