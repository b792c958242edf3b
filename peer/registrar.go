package peer

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/wire"
)

// registerTimeout bounds one registration request.
const registerTimeout = 10 * time.Second

// registrar registers this agent with the configured registry when it
// starts, again whenever what it declares changes (a handler registered,
// a component started), and every heartbeat interval. It waits while the
// agent lacks a basic interface (the registry would refuse it): the HTTP
// server provides three of them when it is built, after Open. A failed
// registration is tried again at the next interval or change.
func (n *Network) registrar() {
	rc := n.registry
	if rc == nil {
		return
	}
	interval := rc.HeartbeatInterval()
	changes := n.a.CapabilityChanges()
	tick := make(chan struct{}, 1)
	st := registrarState{url: strings.TrimRight(rc.URL, "/")}
	for { // until close
		st.report(n, n.register(rc, &st, interval))
		t := n.clock.AfterFunc(interval, func() {
			select {
			case tick <- struct{}{}:
			default:
			}
		})
		select {
		case <-tick:
		case <-changes:
		case <-n.ctx.Done():
			t.Stop()
			return
		}
		t.Stop()
	}
}

// registrarState is what the registrar remembers between attempts.
type registrarState struct {
	url string
	// signed is the timestamp of the last registration sent; the next one
	// is signed later (the registry drops one that is not).
	signed time.Time
	// last is the outcome last logged: "registered", "waiting: ..." or the
	// error text.
	last string
}

// errNotCompliant is register's error while a basic interface is missing.
type errNotCompliant []string

func (e errNotCompliant) Error() string {
	return fmt.Sprintf("waiting for basic interfaces %v", []string(e))
}

// register sends one registration.
func (n *Network) register(rc *RegistryConfig, st *registrarState, interval time.Duration) error {
	ifaces := n.a.GetSupportedInterfaces()
	if ev := wire.EvaluateCompliance(n.a.Identity().AgentID, ifaces); !ev.Compliant {
		return errNotCompliant(ev.MissingBasics)
	}
	hb := n.pairing.heartbeat()
	reg := wire.Registration{Identity: n.a.Identity(), Capabilities: n.a.Capabilities(), Interfaces: ifaces,
		HeartbeatIntervalSeconds: int(interval / time.Second), Status: hb.Status,
		ActiveTasks: hb.ActiveTasks, MaxTasks: hb.MaxTasks}
	payload, err := wire.NewJSONPayload(&reg)
	if err != nil {
		return fmt.Errorf("registration payload: %w", err)
	}
	at := n.clock.Now().UTC().Truncate(time.Millisecond)
	if !at.After(st.signed) {
		at = st.signed.Add(time.Millisecond)
	}
	m := wire.NewMessage(wire.MsgRegistryRegister, n.self(), wire.AgentRef{}, payload, at)
	if err := n.a.Sign(m); err != nil {
		return fmt.Errorf("sign registration: %w", err)
	}
	body, err := wire.EncodeEnvelopeJSON(m)
	if err != nil {
		return fmt.Errorf("encode registration: %w", err)
	}
	header := map[string]string{}
	if rc.Token != "" {
		header[transport.HeaderAuthorization] = "Bearer " + rc.Token
	}
	ctx, cancel := context.WithTimeout(n.ctx, registerTimeout)
	defer cancel()
	st.signed = at
	o := n.send(ctx, &transport.Message{Kind: transport.Request, To: st.url + RegistryAgentsPath, Body: body,
		ContentType: wire.ContentJSON, Header: header})
	if o.Status == 0 {
		return o.Err
	}
	if o.Status == 401 || o.Status == 403 {
		hint := "set registry.token_env to the name of an environment variable holding a token with the registry:write scope on the registry (there: synapse token create NAME --scope registry:write)"
		switch {
		case rc.TokenEnv != "" && rc.Token == "":
			hint = "the environment variable " + rc.TokenEnv + " (registry.token_env) is empty; it must hold a token with the registry:write scope on the registry"
		case rc.Token != "":
			hint = "the registry refused the token from " + rc.TokenEnv + "; it needs the registry:write scope there"
		}
		return fmt.Errorf("%w (%s)", o.Err, hint)
	}
	if !o.Delivered() {
		return o.Err
	}
	return nil
}

// report logs the outcome of an attempt when it differs from the last.
func (st *registrarState) report(n *Network, err error) {
	now := "registered"
	if err != nil {
		now = err.Error()
	}
	if now == st.last {
		return
	}
	st.last = now
	switch err.(type) {
	case nil:
		n.log.Info("registered with the registry", "registry", st.url)
	case errNotCompliant:
		n.log.Debug("not registering yet", "registry", st.url, "reason", now)
	default:
		if n.ctx.Err() == nil {
			n.log.Warn("registration failed; trying again at the next interval", "registry", st.url, "err", err)
		}
	}
}
