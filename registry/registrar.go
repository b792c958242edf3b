package registry

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/wire"
)

// The registrar: this agent's registration with another registry (its
// configured registry section). It registers when it starts, again
// whenever what the agent declares changes (a handler registered, a
// component started), and every heartbeat interval. It waits while the
// agent lacks a basic interface (the registry would refuse it): the HTTP
// server provides three of them when it is built, after the agent opened.
// A failed registration is tried again at the next interval or change.
//
// A registration is a signed wire.MsgRegistryRegister envelope (its
// payload a wire.Registration) posted as JSON to the registry's
// AgentsPath, with the bearer token of the registry section. Each one is
// signed strictly later than the one before (Register takes a
// registration signed at or before the last one as a replay).

// registerTimeout bounds one registration request.
const registerTimeout = 10 * time.Second

// RegistrarOptions is what a Registrar needs of its agent: where to
// register, what it declares, its key, its clock and its transport.
type RegistrarOptions struct {
	// URL is the registry's base URL; Token its bearer token, read from
	// the environment variable TokenEnv (named in the hints of a refusal).
	URL, Token, TokenEnv string
	// Interval is how often the agent registers again, and the heartbeat
	// interval its registration declares.
	Interval time.Duration
	// Sender is the agent as the envelope's sender.
	Sender wire.AgentRef
	// Registration is what the agent declares now (its identity,
	// capabilities, interfaces and load); the registrar sets the interval.
	Registration func() wire.Registration
	// Sign signs an envelope with the agent's key.
	Sign func(*wire.UnifiedSynapseMessage) error
	// Send sends a request through the agent's transport.
	Send func(context.Context, *transport.Message) transport.Outcome
	// Now is the agent's clock; AfterFunc runs f after d on it and
	// returns what stops it.
	Now       func() time.Time
	AfterFunc func(d time.Duration, f func()) (stop func())
	// Changes receives a value whenever what the agent declares changes.
	Changes <-chan struct{}
	// Logger logs the outcomes, each once until it changes.
	Logger *slog.Logger
}

// Registrar registers an agent with a registry; Run does it until its
// context ends.
type Registrar struct {
	o   RegistrarOptions
	url string
	// signed is the timestamp of the last registration sent; the next one
	// is signed later (the registry drops one that is not).
	signed time.Time
	// last is the outcome last logged: "registered", "waiting: ..." or the
	// error text.
	last string
}

// NewRegistrar builds the registrar of o.
func NewRegistrar(o RegistrarOptions) *Registrar {
	return &Registrar{o: o, url: strings.TrimRight(o.URL, "/")}
}

// Run registers now, then at every interval or change, until ctx ends.
func (r *Registrar) Run(ctx context.Context) {
	tick := make(chan struct{}, 1)
	for { // until ctx ends
		r.report(ctx, r.register(ctx))
		stop := r.o.AfterFunc(r.o.Interval, func() {
			select {
			case tick <- struct{}{}:
			default:
			}
		})
		select {
		case <-tick:
		case <-r.o.Changes:
		case <-ctx.Done():
			stop()
			return
		}
		stop()
	}
}

// errNotCompliant is register's error while a basic interface is missing.
type errNotCompliant []string

func (e errNotCompliant) Error() string {
	return fmt.Sprintf("waiting for basic interfaces %v", []string(e))
}

// register sends one registration.
func (r *Registrar) register(ctx context.Context) error {
	reg := r.o.Registration()
	if ev := wire.EvaluateCompliance(reg.Identity.AgentID, reg.Interfaces); !ev.Compliant {
		return errNotCompliant(ev.MissingBasics)
	}
	reg.HeartbeatIntervalSeconds = int(r.o.Interval / time.Second)
	payload, err := wire.NewJSONPayload(&reg)
	if err != nil {
		return fmt.Errorf("registration payload: %w", err)
	}
	at := r.o.Now().UTC().Truncate(time.Millisecond)
	if !at.After(r.signed) {
		at = r.signed.Add(time.Millisecond)
	}
	m := wire.NewMessage(wire.MsgRegistryRegister, r.o.Sender, wire.AgentRef{}, payload, at)
	if err := r.o.Sign(m); err != nil {
		return fmt.Errorf("sign registration: %w", err)
	}
	body, err := wire.EncodeEnvelopeJSON(m)
	if err != nil {
		return fmt.Errorf("encode registration: %w", err)
	}
	header := map[string]string{}
	if r.o.Token != "" {
		header[transport.HeaderAuthorization] = "Bearer " + r.o.Token
	}
	ctx, cancel := context.WithTimeout(ctx, registerTimeout)
	defer cancel()
	r.signed = at
	o := r.o.Send(ctx, &transport.Message{Kind: transport.Request, To: r.url + AgentsPath, Body: body,
		ContentType: wire.ContentJSON, Header: header})
	if o.Status == 0 {
		return o.Err
	}
	if o.Status == 401 || o.Status == 403 {
		hint := "set registry.token_env to the name of an environment variable holding a token with the registry:write scope on the registry (there: synapse token create NAME --scope registry:write)"
		switch {
		case r.o.TokenEnv != "" && r.o.Token == "":
			hint = "the environment variable " + r.o.TokenEnv + " (registry.token_env) is empty; it must hold a token with the registry:write scope on the registry"
		case r.o.Token != "":
			hint = "the registry refused the token from " + r.o.TokenEnv + "; it needs the registry:write scope there"
		}
		return fmt.Errorf("%w (%s)", o.Err, hint)
	}
	if !o.Delivered() {
		return o.Err
	}
	return nil
}

// report logs the outcome of an attempt when it differs from the last.
func (r *Registrar) report(ctx context.Context, err error) {
	now := "registered"
	if err != nil {
		now = err.Error()
	}
	if now == r.last {
		return
	}
	r.last = now
	switch err.(type) {
	case nil:
		r.o.Logger.Info("registered with the registry", "registry", r.url)
	case errNotCompliant:
		r.o.Logger.Debug("not registering yet", "registry", r.url, "reason", now)
	default:
		if ctx.Err() == nil {
			r.o.Logger.Warn("registration failed; trying again at the next interval", "registry", r.url, "err", err)
		}
	}
}
