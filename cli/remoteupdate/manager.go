package remoteupdate

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/internal/atomicfile"
	"github.com/synapse-edge/synapse/internal/selfupdate"
	"github.com/synapse-edge/synapse/transport/mqtt"
	"github.com/synapse-edge/synapse/wire"
)

// MsgUpdateReported is the message_type of a reported document.
const MsgUpdateReported wire.MessageType = "update_reported"

// Results of a report.
const (
	ResultRefused    = "refused"    // the command is not taken (Reason); nothing changed
	ResultFailed     = "failed"     // taken, but the download or the install failed; nothing changed
	ResultInstalling = "installing" // taken: downloading and checking
	ResultInstalled  = "installed"  // swapped in; the agent restarts into it
	// And the state file's states: trial, ok, rolled_back, aborted.
)

// FloorFile is the file in the data directory that keeps the version of
// the last command taken (and its document's SHA-256).
const FloorFile = "update-command.json"

// Report is a reported document's payload.
type Report struct {
	// DesiredVersion is the version of the command this is about (0: none
	// taken yet).
	DesiredVersion uint64 `json:"desired_version"`
	Result         string `json:"result"`
	Reason         string `json:"reason,omitempty"`
	// Running is the version of the binary that reports; Update the
	// state file's (the last update's new version) and FromVersion its
	// old one.
	Running     string `json:"running"`
	Update      string `json:"update,omitempty"`
	FromVersion string `json:"from_version,omitempty"`
}

// Options are what a Manager is built with.
type Options struct {
	Agent     *agent.Agent // opened: its identity signs the reports
	Transport *mqtt.Transport
	Config    *selfupdate.Config
	Session   *selfupdate.Session
	DataDir   string
	Version   string // the running binary's
	Logger    *slog.Logger
}

// Manager takes the update commands of one agent.
type Manager struct {
	o        Options
	log      *slog.Logger
	keys     []ed25519.PublicKey
	desired  string
	reported string

	work chan []byte
	stop chan struct{}
	done chan struct{}
	once sync.Once

	mu    sync.Mutex
	floor floor
}

type floor struct {
	Version uint64 `json:"version"`
	SHA256  string `json:"sha256"`
}

// New reads the floor; Start subscribes.
func New(o Options) (*Manager, error) {
	c := o.Transport.Client()
	if c == nil {
		return nil, errors.New("update commands: the mqtt transport is not started")
	}
	id := o.Agent.Identity().AgentID
	t := mqtt.Topics{Prefix: c.Options().TopicPrefix}
	desired, err := t.UpdateDesired(id)
	if err != nil {
		return nil, err
	}
	reported, err := t.UpdateReported(id)
	if err != nil {
		return nil, err
	}
	m := &Manager{o: o, log: o.Logger.With("component", "remote_update"), keys: o.Config.Operators(), desired: desired, reported: reported,
		work: make(chan []byte, 1), stop: make(chan struct{}), done: make(chan struct{})}
	b, err := os.ReadFile(filepath.Join(o.DataDir, FloorFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("update commands: %w", err)
	default:
		if err := json.Unmarshal(b, &m.floor); err != nil {
			return nil, fmt.Errorf("update commands: %s: %w", FloorFile, err)
		}
	}
	return m, nil
}

// Start reports the state this start found, subscribes to the commands
// and reports the trial's end when it comes.
func (m *Manager) Start(ctx context.Context) error {
	go m.run()
	rep := m.stateReport()
	m.o.Session.OnSettled(func(st selfupdate.State) {
		r := m.stateReport()
		r.Result, r.Reason, r.Update, r.FromVersion = st.State, st.Reason, st.Version, st.FromVersion
		go m.publish(r) // a rollback's restart does not wait for the broker
	})
	if rep.DesiredVersion > 0 {
		go m.publish(rep)
	}
	return m.o.Transport.Client().Subscribe(ctx, m.desired, func(_ string, raw []byte) {
		if len(raw) == 0 {
			return
		}
		select { // the newest waits; an older one waiting is dropped
		case <-m.work:
		default:
		}
		m.work <- raw
	})
}

// Close stops taking commands; safe twice.
func (m *Manager) Close() {
	m.once.Do(func() { close(m.stop) })
	<-m.done
}

// stateReport is the report of the floor and the state file.
func (m *Manager) stateReport() Report {
	m.mu.Lock()
	r := Report{DesiredVersion: m.floor.Version, Running: m.o.Version}
	m.mu.Unlock()
	if st := m.o.Session.Current(); st != nil {
		r.Result, r.Reason, r.Update, r.FromVersion = st.State, st.Reason, st.Version, st.FromVersion
	}
	return r
}

func (m *Manager) run() {
	defer close(m.done)
	for {
		select {
		case <-m.stop:
			return
		case raw := <-m.work:
			if r, ok := m.take(raw); ok {
				m.publish(r)
			}
		}
	}
}

// take checks and installs one command; false: nothing to report (the
// command taken last, sent again).
func (m *Manager) take(raw []byte) (Report, bool) {
	rep := Report{Running: m.o.Version, Result: ResultRefused}
	refuse := func(format string, args ...any) (Report, bool) {
		rep.Reason = fmt.Sprintf(format, args...)
		m.log.Warn("update command refused; nothing changed", "version", rep.DesiredVersion, "reason", rep.Reason)
		return rep, true
	}
	d, err := Decode(raw)
	if err != nil {
		return refuse("malformed: %v", err)
	}
	rep.DesiredVersion = d.Version
	if err := d.Verify(m.o.Agent.Identity().AgentID, m.keys); err != nil {
		return refuse("%v", err)
	}
	sum := sha256.Sum256(raw)
	m.mu.Lock()
	fl := m.floor
	m.mu.Unlock()
	switch {
	case d.Version == fl.Version && hex.EncodeToString(sum[:]) == fl.SHA256:
		return Report{}, false
	case d.Version <= fl.Version:
		return refuse("version %d is not newer than version %d, the last taken", d.Version, fl.Version)
	}
	next := floor{Version: d.Version, SHA256: hex.EncodeToString(sum[:])}
	b, _ := json.Marshal(next)
	if err := atomicfile.Write(filepath.Join(m.o.DataDir, FloorFile), b, 0o600); err != nil {
		rep.Result, rep.Reason = ResultFailed, "store: "+err.Error()
		return rep, true
	}
	m.mu.Lock()
	m.floor = next
	m.mu.Unlock()
	rep.Result = ResultInstalling
	m.publish(rep)
	fail := func(err error) (Report, bool) {
		rep.Result, rep.Reason = ResultFailed, err.Error()
		m.log.Error("update command failed; nothing changed", "version", d.Version, "url", d.URL, "err", err)
		return rep, true
	}
	keys, err := m.o.Config.Keys()
	if err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-m.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	body, _, err := selfupdate.Open(ctx, d.URL, m.o.Config.Max())
	if err != nil {
		return fail(err)
	}
	defer body.Close()
	st, err := selfupdate.Install(ctx, selfupdate.Request{Binary: m.o.Session.Binary(), Body: body, Max: m.o.Config.Max(),
		Signature: []byte(d.Minisig), SHA256: d.SHA256, Keys: keys, FromVersion: m.o.Version, Source: "mqtt " + d.URL,
		HealthTimeout: m.o.Config.HealthTimeout()})
	if err != nil {
		return fail(err)
	}
	rep.Result, rep.Update, rep.FromVersion = ResultInstalled, st.Version, st.FromVersion
	m.log.Info("update command: installed; restarting", "version", d.Version, "update", st.Version)
	m.publish(rep)
	m.o.Session.RequestRestart(fmt.Sprintf("update command %d: %s", d.Version, st.Version))
	return Report{}, false
}

// publish sends rep, retained and signed, waiting up to 10 s.
func (m *Manager) publish(rep Report) {
	b, err := m.encode(rep)
	if err != nil {
		m.log.Error("update command: cannot build the report", "err", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.o.Transport.Client().Publish(ctx, m.reported, b, true); err != nil {
		m.log.Warn("update command: report not published", "result", rep.Result, "err", err)
	}
}

func (m *Manager) encode(rep Report) ([]byte, error) {
	p, err := wire.NewJSONPayload(rep)
	if err != nil {
		return nil, err
	}
	id := m.o.Agent.Identity()
	msg := wire.NewMessage(MsgUpdateReported, wire.AgentRef{AgentID: id.AgentID, SystemID: id.SystemID, Endpoint: id.Endpoint},
		wire.AgentRef{AgentID: "*"}, p, time.Now())
	if err := m.o.Agent.Sign(msg); err != nil {
		return nil, err
	}
	return wire.EncodeEnvelopeJSON(msg)
}

// ParseReport decodes a reported document and checks its signature with
// the agent's public key.
func ParseReport(raw []byte, key ed25519.PublicKey) (*Report, error) {
	if len(raw) > MaxDocument {
		return nil, errors.New("report larger than 16 KiB")
	}
	msg, err := wire.DecodeEnvelope(raw, false)
	if err != nil {
		return nil, err
	}
	if msg.MessageType != MsgUpdateReported {
		return nil, fmt.Errorf("message_type %q", msg.MessageType)
	}
	if err := wire.Verify(msg, key); err != nil {
		return nil, err
	}
	var r Report
	if err := msg.Payload.Decode(&r); err != nil {
		return nil, err
	}
	return &r, nil
}
