// Package registry is the directory an agent keeps of the agents that
// register with it (seed 000 §6.4), and of those other directory sources
// know (an MQTT broker's presence cards): registrations checked and
// stored, FindByCapability, one entry, unregistering; and the registrar
// (registrar.go), which registers an agent with another registry. Package
// peer builds both for its Network (Network.Directory serves the
// directory); the directory needs only the store, the agent's id, its
// clock and the keys pinned for paired peers (Options), the registrar
// the agent's declaration, key, clock and transport (RegistrarOptions).
package registry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/synapse-edge/synapse/internal/agentid"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// The registry (seed 000 §6.4): any agent keeps a directory of the agents
// that register with it, and answers FindByCapability from it.
//
// A registration is an envelope of type wire.MsgRegistryRegister whose
// payload is a wire.Registration, signed with the registering agent's
// Ed25519 key. Register checks, in this order: the message type and
// payload; that the sender, the identity and the capabilities name the
// same agent_id; the signature, against the public key the registration
// carries (TP-ID003); the timestamp, within ±300 s (TP-ID005); the
// protocol version's MAJOR (TP-VER001); the basic
// interfaces (not_compliant, 422, with details.missing_basics). The key
// of the first registration is pinned to the agent_id: a registration of
// the same agent_id with another key, or with another key than the one
// this agent pinned for it as a peer, is refused (409) — an agent cannot
// register for another agent's id. A registration signed at or before the
// last one taken is a replay: answered as a duplicate (TP-ID004), with no
// effect (registrants sign with strictly increasing timestamps; with the
// ±300 s window this needs no list of seen message ids). Unregister
// forgets an entry and its key.
//
// An entry is online (or busy, as the agent reported) until three of its
// heartbeat intervals pass without a registration; then it shows offline.
// Offline is computed when reading, from the agent's clock, so nothing
// needs to run for entries to expire.

// AgentsPath is the path registrations are posted to.
const AgentsPath = wire.APIPrefix + "/registry/agents"

// Directory limits.
const (
	// MaxEntries bounds the number of agents a registry keeps.
	MaxEntries = 10_000
	// maxRegisteredInterfaces bounds the interface list of one entry.
	maxRegisteredInterfaces = 64
	// offlineAfter is how many heartbeat intervals of silence make an
	// entry offline (as a peer's).
	offlineAfter = 3
)

// Heartbeat intervals a registration may declare, in seconds (the
// registrar's and the registry's limits); 0 means DefaultInterval.
const (
	MinInterval     = 1
	MaxInterval     = 86_400
	DefaultInterval = 30
)

// Statuses of an entry.
const (
	Online  = "online"
	Busy    = "busy"
	Offline = "offline"
)

// Options is what a Directory needs of its agent.
type Options struct {
	// Now is the agent's clock.
	Now func() time.Time
	// Logger logs registrations (component=registry).
	Logger *slog.Logger
	// PinnedKey is the public key pinned for agentID when it is a paired
	// peer: a registration, or a source's entry, under another key is
	// refused.
	PinnedKey func(agentID string) (publicKey string, ok bool)
}

// Directory is the registry of one agent. Build it with New; Open gives
// it the store and the agent's id before the first registration.
type Directory struct {
	o  Options
	db *store.DB
	// agentID is this agent's: a registration for another receiver is
	// refused.
	agentID string
	sources sources
}

// New builds a directory with no store yet.
func New(o Options) *Directory { return &Directory{o: o} }

// Open sets the store the directory is kept in and the agent's id, both
// known once the agent opened.
func (d *Directory) Open(db *store.DB, agentID string) { d.db, d.agentID = db, agentID }

// Entry is a registered agent as the registry shows it.
type Entry struct {
	AgentID         string `json:"agent_id" msgpack:"agent_id"`
	AgentName       string `json:"agent_name,omitempty" msgpack:"agent_name,omitempty"`
	SystemID        string `json:"system_id,omitempty" msgpack:"system_id,omitempty"`
	Endpoint        string `json:"endpoint" msgpack:"endpoint"`
	PublicKey       string `json:"public_key" msgpack:"public_key"`
	ProtocolVersion string `json:"protocol_version,omitempty" msgpack:"protocol_version,omitempty"`
	// Status is online, busy or offline.
	Status                   string `json:"status" msgpack:"status"`
	ActiveTasks              int    `json:"active_tasks" msgpack:"active_tasks"`
	MaxTasks                 int    `json:"max_tasks" msgpack:"max_tasks"`
	HeartbeatIntervalSeconds int    `json:"heartbeat_interval_seconds" msgpack:"heartbeat_interval_seconds"`
	RegisteredAt             string `json:"registered_at" msgpack:"registered_at"`
	LastSeen                 string `json:"last_seen" msgpack:"last_seen"`
	// Capabilities are the task types the agent declares, as seed 003
	// §4.3's AgentInfo lists them (a list of strings); AgentCapabilities
	// is the whole declaration, as GET /agents names it.
	Capabilities      []string                    `json:"capabilities" msgpack:"capabilities"`
	AgentCapabilities *wire.AgentCapabilities     `json:"agent_capabilities" msgpack:"agent_capabilities"`
	Interfaces        []wire.ImplementedInterface `json:"interfaces" msgpack:"interfaces"`
	Compliance        wire.ComplianceEvaluation   `json:"compliance" msgpack:"compliance"`
	// Source is where the entry comes from: SourceRegistry, or the name of
	// a directory source (sources.go), e.g. "mqtt".
	Source string `json:"source" msgpack:"source"`
}

// Query selects entries of the directory; empty fields match
// everything.
type Query struct {
	// Capability matches a task type whose capabilities list it, or whose
	// type it is.
	Capability string
	// TaskType matches a task type by type, or, for one of the predefined
	// ids of seed 000 §3.3, a task type that declares it among its
	// capabilities. With Capability, both must hold for the same task type.
	TaskType string
	// Status is online, busy or offline.
	Status string
}

// IsZero reports whether q selects everything.
func (q Query) IsZero() bool { return q == Query{} }

func (q Query) check() error {
	switch q.Status {
	case "", Online, Busy, Offline:
		return nil
	}
	return wire.Errorf(wire.CodeInvalidParams, "status %q: use online, busy or offline", q.Status).With("field", "status")
}

func (q Query) matches(e *Entry) bool {
	if q.Status != "" && e.Status != q.Status {
		return false
	}
	if q.Capability == "" && q.TaskType == "" {
		return true
	}
	_, predefined := wire.LookupTaskType(q.TaskType)
	for _, t := range e.AgentCapabilities.SupportedTaskTypes {
		// A predefined id (seed 000 §3.3) is also matched by the task
		// types that declare it among their capabilities.
		if q.TaskType != "" && t.Type != q.TaskType && !(predefined && t.Declares(q.TaskType)) {
			continue
		}
		if q.Capability != "" && t.Type != q.Capability && !slices.Contains(t.Capabilities, q.Capability) {
			continue
		}
		return true
	}
	return false
}

// Registered is the registry's answer to a registration.
type Registered struct {
	AgentID string `json:"agent_id" msgpack:"agent_id"`
	// Created is true for the first registration of this agent_id (HTTP
	// 201), false for a renewal (200).
	Created bool `json:"created" msgpack:"created"`
	// Duplicate is true when the message was already processed (TP-ID004);
	// nothing changed.
	Duplicate                bool   `json:"duplicate,omitempty" msgpack:"duplicate,omitempty"`
	Status                   string `json:"status" msgpack:"status"`
	HeartbeatIntervalSeconds int    `json:"heartbeat_interval_seconds" msgpack:"heartbeat_interval_seconds"`
	// OfflineAt is when the entry shows offline without another
	// registration.
	OfflineAt  string                    `json:"offline_at" msgpack:"offline_at"`
	Compliance wire.ComplianceEvaluation `json:"compliance" msgpack:"compliance"`
}

// Register takes a registration envelope into the directory (see the
// comment at the top of this file). Refusals are *wire.Error.
func (d *Directory) Register(ctx context.Context, m *wire.UnifiedSynapseMessage) (*Registered, error) {
	reg, pub, err := d.check(m)
	if err != nil {
		return nil, err
	}
	signedAt, err := m.Time()
	if err != nil {
		return nil, wire.Errorf(wire.CodeMessageFormatInvalid, "timestamp: %v", err)
	}
	id := reg.Identity.AgentID
	ev := wire.EvaluateCompliance(id, reg.Interfaces)
	if !ev.Compliant {
		return nil, wire.Errorf(wire.CodeNotCompliant, "agent %s lacks basic interfaces: %v", id, ev.MissingBasics).
			With("agent_id", id).With("missing_basics", ev.MissingBasics).With("compliance", ev)
	}
	if key, ok := d.o.PinnedKey(id); ok && key != pub {
		return nil, keyConflict(id, "is paired with this agent under another public key")
	}
	now := d.o.Now().UTC()
	interval := reg.HeartbeatIntervalSeconds
	status := Online
	if reg.Status == Busy {
		status = Busy
	}
	ans := &Registered{AgentID: id, Status: status, HeartbeatIntervalSeconds: interval, Compliance: ev,
		OfflineAt: wire.FormatTime(now.Add(offlineAfter * time.Duration(interval) * time.Second))}
	err = d.db.Update(ctx, func(tx *store.Tx) error { // may run more than once
		ans.Created, ans.Duplicate = false, false
		old, err := getRecord(tx, id)
		switch {
		case errors.Is(err, store.ErrNotFound):
			old = nil
			if countRecords(tx) >= MaxEntries {
				return wire.Errorf(wire.CodeSysOverloaded, "the directory is full (%d agents)", MaxEntries)
			}
		case err != nil:
			return err
		case old.PublicKey != pub:
			return keyConflict(id, "is registered under another public key")
		case !signedAt.After(old.SignedAt):
			ans.Duplicate = true
			return nil
		}
		e := &record{AgentID: id, AgentName: reg.Identity.AgentName, SystemID: reg.Identity.SystemID,
			Endpoint: reg.Identity.Endpoint, PublicKey: pub, ProtocolVersion: reg.Capabilities.ProtocolVersion,
			Capabilities: *reg.Capabilities, Interfaces: reg.Interfaces, Status: status,
			ActiveTasks: reg.ActiveTasks, MaxTasks: reg.MaxTasks, HeartbeatIntervalSeconds: interval,
			RegisteredAt: now, LastSeen: now, SignedAt: signedAt}
		if old != nil {
			e.RegisteredAt = old.RegisteredAt
		}
		ans.Created = old == nil
		return putRecord(tx, e)
	})
	if err != nil {
		var we *wire.Error
		if errors.As(err, &we) {
			return nil, we
		}
		return nil, wire.Errorf(wire.CodeSysStorage, "store registration: %v", err)
	}
	if ans.Created {
		d.o.Logger.Info("agent registered", "component", "registry", "agent_id", id, "endpoint", reg.Identity.Endpoint)
	}
	return ans, nil
}

func keyConflict(id, why string) error {
	return wire.Errorf(wire.CodeInvalidStateChange,
		"agent %s %s; an agent cannot register for another agent's id (remove the entry to pin a new key)", id, why).
		With("agent_id", id).With("reason", "public_key_changed")
}

// check checks everything of a registration that needs no
// store: it returns the payload, normalised, and the public key.
func (d *Directory) check(m *wire.UnifiedSynapseMessage) (*wire.Registration, string, error) {
	if m.MessageType != wire.MsgRegistryRegister {
		return nil, "", wire.Errorf(wire.CodeInvalidParams, "message_type is %q; a registration is %q", m.MessageType, wire.MsgRegistryRegister).
			With("field", "message_type")
	}
	if m.Receiver.AgentID != "" && m.Receiver.AgentID != d.agentID {
		return nil, "", wire.Errorf(wire.CodeInvalidParams, "the registration is for %q; this agent is %q", m.Receiver.AgentID, d.agentID).
			With("receiver", m.Receiver.AgentID)
	}
	var reg wire.Registration
	if err := m.Payload.Decode(&reg); err != nil {
		return nil, "", wire.Errorf(wire.CodeMessageFormatInvalid, "registration payload: %v", err)
	}
	id := reg.Identity.AgentID
	if err := agentid.Check(id); err != nil {
		return nil, "", wire.Errorf(wire.CodeInvalidParams, "identity: %v", err).With("field", "identity.agent_id")
	}
	if m.Sender.AgentID != id {
		return nil, "", wire.Errorf(wire.CodeInvalidParams, "the sender %q is not the agent %q that registers", m.Sender.AgentID, id).
			With("field", "sender.agent_id")
	}
	key, err := agentid.DecodePublicKey(reg.Identity.PublicKey)
	if err != nil {
		return nil, "", wire.Errorf(wire.CodeInvalidParams, "identity: %v", err).With("field", "identity.public_key")
	}
	if err := wire.Verify(m, key); err != nil {
		return nil, "", wire.Errorf(wire.CodeIDUnknownSender, "registration of %s: %v", id, err).With("sender", id)
	}
	if err := wire.CheckTimestamp(m, d.o.Now(), wire.ReplayWindow); err != nil {
		if errors.Is(err, wire.ErrStaleTimestamp) {
			return nil, "", wire.Errorf(wire.CodeIDStaleTimestamp, "%v", err)
		}
		return nil, "", wire.Errorf(wire.CodeMessageFormatInvalid, "%v", err)
	}
	if reg.Identity.Endpoint, err = agentid.CheckEndpoint(reg.Identity.Endpoint); err != nil {
		return nil, "", err
	}
	c := reg.Capabilities
	if c == nil {
		return nil, "", wire.Errorf(wire.CodeInvalidParams, "the registration has no capabilities").With("field", "capabilities")
	}
	if c.AgentID != "" && c.AgentID != id {
		return nil, "", wire.Errorf(wire.CodeInvalidParams, "the capabilities are of agent %q, not %q", c.AgentID, id).
			With("field", "capabilities.agent_id")
	}
	c.AgentID = id
	if c.ProtocolVersion == "" {
		c.ProtocolVersion = reg.Identity.ProtocolVersion
	}
	if _, err := wire.VersionBaseline(wire.ProtocolVersion, c.ProtocolVersion); err != nil {
		return nil, "", wire.Errorf(wire.CodeVerUnsupported, "capabilities.protocol_version: %v", err).
			With("protocol_version", c.ProtocolVersion)
	}
	if len(reg.Interfaces) > maxRegisteredInterfaces {
		return nil, "", wire.Errorf(wire.CodeInvalidParams, "more than %d interfaces", maxRegisteredInterfaces).With("field", "interfaces")
	}
	switch iv := reg.HeartbeatIntervalSeconds; {
	case iv == 0:
		reg.HeartbeatIntervalSeconds = DefaultInterval
	case iv < MinInterval || iv > MaxInterval:
		return nil, "", wire.Errorf(wire.CodeInvalidParams, "heartbeat_interval_seconds %d is outside %d..%d",
			iv, MinInterval, MaxInterval).With("field", "heartbeat_interval_seconds")
	}
	return &reg, reg.Identity.PublicKey, nil
}

// entry is the API view of a stored entry at time now.
func entry(e *record, now time.Time) Entry {
	status := e.Status
	ttl := offlineAfter * time.Duration(e.HeartbeatIntervalSeconds) * time.Second
	if now.Sub(e.LastSeen) > ttl {
		status = Offline
	}
	caps := e.Capabilities
	return Entry{AgentID: e.AgentID, AgentName: e.AgentName, SystemID: e.SystemID, Endpoint: e.Endpoint,
		PublicKey: e.PublicKey, ProtocolVersion: e.ProtocolVersion, Status: status,
		ActiveTasks: e.ActiveTasks, MaxTasks: e.MaxTasks, HeartbeatIntervalSeconds: e.HeartbeatIntervalSeconds,
		RegisteredAt: wire.FormatTime(e.RegisteredAt), LastSeen: wire.FormatTime(e.LastSeen),
		Capabilities: TaskTypes(&caps), AgentCapabilities: &caps, Interfaces: e.Interfaces, Compliance: wire.EvaluateCompliance(e.AgentID, e.Interfaces),
		Source: SourceRegistry}
}

// List is a directory listing as seed 003 §4.3's ListAgentsResponse: the
// entries and their number (GET /registry/agents, GET /agents?capability=).
type List struct {
	Agents []Entry `json:"agents" msgpack:"agents"`
	Total  int     `json:"total" msgpack:"total"`
}

// Listing is the List of entries (never a null agents).
func Listing(entries []Entry) List {
	if entries == nil {
		entries = []Entry{}
	}
	return List{Agents: entries, Total: len(entries)}
}

// TaskTypes are the task types caps declares, never nil: an agent's
// capabilities as seed 003 §4.3's AgentInfo lists them.
func TaskTypes(caps *wire.AgentCapabilities) []string {
	out := []string{}
	if caps == nil {
		return out
	}
	for _, t := range caps.SupportedTaskTypes {
		out = append(out, t.Type)
	}
	return out
}

// FindByCapability lists the registered agents q selects, by agent_id,
// then those of the directory sources (sources.go).
func (d *Directory) FindByCapability(q Query) ([]Entry, error) {
	if err := q.check(); err != nil {
		return nil, err
	}
	now := d.o.Now()
	out := []Entry{}
	err := d.db.View(func(tx *store.Tx) error {
		return forEachRecord(tx, func(e *record) error {
			if v := entry(e, now); q.matches(&v) {
				out = append(out, v)
			}
			return nil
		})
	})
	if err != nil {
		return nil, wire.Errorf(wire.CodeSysStorage, "read the directory: %v", err)
	}
	return d.fromSources(q, out), nil
}

// Registration reads one entry of the directory.
func (d *Directory) Registration(agentID string) (*Entry, error) {
	var v Entry
	err := d.db.View(func(tx *store.Tx) error {
		e, err := getRecord(tx, agentID)
		if err == nil {
			v = entry(e, d.o.Now())
		}
		return err
	})
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, errBadKey):
		return nil, errNotRegistered(agentID)
	case err != nil:
		return nil, wire.Errorf(wire.CodeSysStorage, "read the directory: %v", err)
	}
	return &v, nil
}

// Unregister removes an agent from the directory, and so its pinned key.
func (d *Directory) Unregister(ctx context.Context, agentID string) error {
	err := d.db.Update(ctx, func(tx *store.Tx) error { return deleteRecord(tx, agentID) })
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, errBadKey):
		return errNotRegistered(agentID)
	case err != nil:
		return wire.Errorf(wire.CodeSysStorage, "remove registration: %v", err)
	}
	d.o.Logger.Info("agent unregistered", "component", "registry", "agent_id", agentID)
	return nil
}

func errNotRegistered(id string) error {
	return wire.Errorf(wire.CodeNotFound, "no agent %q in the directory", id).With("agent_id", id)
}

// String describes a query for logs and messages.
func (q Query) String() string {
	return fmt.Sprintf("capability=%q task_type=%q status=%q", q.Capability, q.TaskType, q.Status)
}
