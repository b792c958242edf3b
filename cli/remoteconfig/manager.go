package remoteconfig

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/cli/config"
	"github.com/synapse-edge/synapse/cli/reload"
	"github.com/synapse-edge/synapse/cli/remoteconfig/desired"
	"github.com/synapse-edge/synapse/internal/metrics"
	"github.com/synapse-edge/synapse/transport/mqtt"
	"github.com/synapse-edge/synapse/wire"
)

// Trigger is the trigger of the reloads a desired document makes (in
// /health's last_reload).
const Trigger = "remote"

// Options are what a Manager is built with.
type Options struct {
	// Agent is the opened agent: its identity, its key (the reports are
	// signed with it) and its metrics.
	Agent *agent.Agent
	// Reloader applies the fragments (serve's, started with
	// AtStart's overlay).
	Reloader *reload.Reloader
	// Transport is the agent's started MQTT transport.
	Transport *mqtt.Transport
	// Config is the remote_config section (checked).
	Config *config.RemoteConfig
	// DataDir is the agent's data directory (StateFile).
	DataDir string
	Logger  *slog.Logger
}

// Manager takes the desired documents of one agent from the broker.
type Manager struct {
	o            Options
	log          *slog.Logger
	keys         []ed25519.PublicKey
	desiredTopic string
	reported     string
	total        *metrics.CounterVec

	mu    sync.Mutex // serialises documents (the broker delivers one at a time); guards what follows
	floor uint64     // the version of the kept document: the newest applied
	kept  [32]byte   // SHA-256 of the kept document's bytes
	next  []byte     // the report waiting to be published

	kick      chan struct{}
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// New reads the kept document's version (the floor a new one must pass)
// and builds the manager; Start subscribes.
func New(o Options) (*Manager, error) {
	id := o.Agent.Identity()
	c := o.Transport.Client()
	if c == nil {
		return nil, errors.New("remote config: the mqtt transport is not started")
	}
	topics := mqtt.Topics{Prefix: c.Options().TopicPrefix}
	desiredTopic, err := topics.ConfigDesired(id.AgentID)
	if err != nil {
		return nil, err
	}
	reported, err := topics.ConfigReported(id.AgentID)
	if err != nil {
		return nil, err
	}
	m := &Manager{o: o, log: o.Logger.With("component", "remote_config"), keys: keysOf(o.Config), desiredTopic: desiredTopic,
		reported: reported, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	d, raw, err := readState(o.DataDir)
	if err != nil {
		// Unreadable: no floor could be trusted; refuse to start rather
		// than apply older documents again.
		return nil, err
	}
	if d != nil {
		m.floor, m.kept = d.Version, sha256.Sum256(raw)
	}
	r := o.Agent.Metrics()
	m.total = r.CounterVec("synapse_remote_config_documents_total", "Desired config documents taken from the broker, by result: applied or refused.", "result")
	r.GaugeFunc("synapse_remote_config_version", "Version of the remote config in force over the config file (0: none).", func() float64 {
		return float64(o.Reloader.Status().RemoteVersion)
	})
	return m, nil
}

// Start subscribes to the agent's desired topic (again on every
// connection: the broker sends the retained document each time) and
// starts the publisher of the reports.
func (m *Manager) Start(ctx context.Context) error {
	go m.publish()
	return m.o.Transport.Client().Subscribe(ctx, m.desiredTopic, m.onDesired)
}

// Close stops publishing; safe twice.
func (m *Manager) Close(context.Context) error {
	m.closeOnce.Do(func() {
		close(m.stop)
		<-m.done
	})
	return nil
}

// onDesired takes one desired document; the broker is acknowledged when
// it returns (after the document is kept and applied, or refused).
func (m *Manager) onDesired(_ string, raw []byte) {
	if len(raw) == 0 {
		m.log.Info("remote config: the desired document was cleared on the broker; the one in force stays")
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	rep := m.take(raw)
	m.total.With(rep.Result).Add(1)
	if rep.Result == desired.ResultRefused {
		m.log.Warn("remote config: desired document refused; nothing changed", "version", rep.DesiredVersion,
			"reason", rep.Reason, "problems", rep.Problems)
	} else {
		m.log.Info("remote config: applied", "version", rep.Version, "hash", rep.ConfigHash,
			"applied", rep.Applied, "restart_required", rep.RestartRequired)
	}
	b, err := m.encode(rep)
	if err != nil {
		m.log.Error("remote config: cannot build the report", "err", err)
		return
	}
	m.next = b
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// take checks and applies raw, with m.mu held, and returns the report.
func (m *Manager) take(raw []byte) desired.Report {
	st := m.o.Reloader.Status()
	rep := desired.Report{Version: st.RemoteVersion, Result: desired.ResultRefused, Problems: []string{}, ConfigHash: st.Hash,
		Applied: []string{}, RestartRequired: []string{}}
	refuse := func(err error) desired.Report {
		var r *desired.Refusal
		if !errors.As(err, &r) {
			r = &desired.Refusal{Reason: desired.ReasonMalformed, Err: err}
		}
		rep.Reason, rep.Problems = r.Reason, append(rep.Problems, r.Err.Error())
		return rep
	}
	d, err := desired.Decode(raw)
	if err != nil {
		// The version it answers, when it can be read.
		var v struct {
			Version uint64 `json:"version"`
		}
		if len(raw) <= desired.MaxDocument && json.Unmarshal(raw, &v) == nil && v.Version <= desired.MaxVersion {
			rep.DesiredVersion = v.Version
		}
		return refuse(err)
	}
	rep.DesiredVersion = d.Version
	if err := d.Verify(m.o.Agent.Identity().AgentID, m.keys); err != nil {
		return refuse(err)
	}
	switch {
	case d.Version == m.floor && sha256.Sum256(raw) == m.kept && st.RemoteVersion == d.Version:
		// The document in force, sent again (every connection, every
		// restart): nothing to do, the report is published again.
		rep.Result = desired.ResultApplied
		return rep
	case d.Version <= m.floor:
		return refuse(desired.Refuse(desired.ReasonStaleVersion, "version %d is not newer than version %d, the last applied", d.Version, m.floor))
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(d.Config, &top); err != nil {
		return refuse(desired.Refuse(desired.ReasonMalformed, "config: %v", err))
	}
	for _, k := range config.RemoteLocked {
		if _, ok := top[k]; ok {
			return refuse(desired.Refuse(desired.ReasonLockedField, "config sets %s, which stays in the config file (locked: %v)", k, config.RemoteLocked))
		}
	}
	var stored error
	res := m.o.Reloader.Overlay(context.Background(), Trigger, d.Version, d.Config, func() error {
		stored = writeState(m.o.DataDir, raw)
		return stored
	})
	if res.Result != wire.ReloadOK {
		reason := desired.ReasonInvalidConfig
		if stored != nil {
			reason = desired.ReasonStoreFailed
		}
		rep.Reason, rep.Problems = reason, append(rep.Problems, res.Problems...)
		return rep
	}
	m.floor, m.kept = d.Version, sha256.Sum256(raw)
	st = m.o.Reloader.Status()
	rep.Result, rep.Version, rep.ConfigHash = desired.ResultApplied, d.Version, st.Hash
	rep.Applied, rep.RestartRequired = slices.Clone(res.Applied), slices.Clone(res.RestartRequired)
	return rep
}

// encode makes the reported document of rep, signed by the agent.
func (m *Manager) encode(rep desired.Report) ([]byte, error) {
	p, err := wire.NewJSONPayload(rep)
	if err != nil {
		return nil, err
	}
	id := m.o.Agent.Identity()
	msg := wire.NewMessage(desired.MsgConfigReported, wire.AgentRef{AgentID: id.AgentID, SystemID: id.SystemID, Endpoint: id.Endpoint},
		wire.AgentRef{AgentID: "*"}, p, time.Now())
	if err := m.o.Agent.Sign(msg); err != nil {
		return nil, err
	}
	return wire.EncodeEnvelopeJSON(msg)
}

// publish sends the newest report, retained, until Close; one that could
// not be sent is tried again (a newer one takes its place).
func (m *Manager) publish() {
	defer close(m.done)
	c := m.o.Transport.Client()
	for {
		select {
		case <-m.stop:
			return
		case <-m.kick:
		}
		for {
			m.mu.Lock()
			b := m.next
			m.mu.Unlock()
			if b == nil {
				break
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			go func() {
				select {
				case <-m.stop:
					cancel()
				case <-ctx.Done():
				}
			}()
			err := c.Publish(ctx, m.reported, b, true)
			cancel()
			m.mu.Lock()
			if err == nil && slices.Equal(m.next, b) {
				m.next = nil
			}
			m.mu.Unlock()
			select {
			case <-m.stop:
				return
			default:
			}
			if err != nil {
				m.log.Warn("remote config: report not published yet; will retry", "err", fmt.Sprint(err))
			}
		}
	}
}
