package agent

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/synapse-edge/synapse/wire"
)

// RegistryConfig names the registry agent this agent registers with (seed
// 000 §6.4; config key "registry").
type RegistryConfig struct {
	// URL is the registry agent's base URL, e.g. http://10.0.0.2:8080.
	URL string `json:"url"`
	// TokenEnv names the environment variable holding the bearer token for
	// the registry (a token with the registry:write scope there).
	TokenEnv string `json:"token_env,omitempty"`
	// Token is read from TokenEnv at start; never from the file.
	Token string `json:"-"`
	// HeartbeatIntervalSeconds is how often the agent registers again;
	// the registry shows it offline after three intervals without one.
	// Default 30.
	HeartbeatIntervalSeconds int `json:"heartbeat_interval_seconds,omitempty"`
}

// HeartbeatInterval is heartbeat_interval_seconds as a duration, with the
// default for 0.
func (r *RegistryConfig) HeartbeatInterval() time.Duration {
	if r.HeartbeatIntervalSeconds == 0 {
		return defaultRegistryInterval * time.Second
	}
	return time.Duration(r.HeartbeatIntervalSeconds) * time.Second
}

// loadEnv reads the token; r may be nil.
func (r *RegistryConfig) loadEnv(getenv func(string) string) {
	if r != nil && r.TokenEnv != "" {
		r.Token = getenv(r.TokenEnv)
	}
}

// check reports bad fields to bad; r may be nil.
func (r *RegistryConfig) check(bad func(field, format string, args ...any)) {
	if r == nil {
		return
	}
	if !strings.HasPrefix(r.URL, "http://") && !strings.HasPrefix(r.URL, "https://") {
		bad("registry.url", "%q must be an http:// or https:// URL", r.URL)
	}
	if iv := r.HeartbeatIntervalSeconds; iv != 0 && (iv < minRegistryInterval || iv > maxRegistryInterval) {
		bad("registry.heartbeat_interval_seconds", "%d is outside %d..%d", iv, minRegistryInterval, maxRegistryInterval)
	}
}

// registerTimeout bounds one registration request.
const registerTimeout = 10 * time.Second

// registrar registers this agent with the configured registry when it
// starts, again whenever what it declares changes (a handler registered,
// a component started), and every heartbeat interval. It waits while the
// agent lacks a basic interface (the registry would refuse it): the HTTP
// server provides three of them when it is built, after Open. A failed
// registration is tried again at the next interval or change.
func (n *p2pNode) registrar() {
	rc := n.a.cfg.Registry
	if rc == nil {
		return
	}
	interval := rc.HeartbeatInterval()
	changes := n.a.caps.changes()
	tick := make(chan struct{}, 1)
	st := registrarState{url: strings.TrimRight(rc.URL, "/")}
	for { // until close
		st.report(n, n.register(rc, &st, interval))
		t := n.a.clock.AfterFunc(interval, func() {
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
func (n *p2pNode) register(rc *RegistryConfig, st *registrarState, interval time.Duration) error {
	a := n.a
	ifaces := a.GetSupportedInterfaces()
	if ev := wire.EvaluateCompliance(a.identity.AgentID, ifaces); !ev.Compliant {
		return errNotCompliant(ev.MissingBasics)
	}
	hb := a.heartbeat()
	reg := wire.Registration{Identity: a.identity, Capabilities: a.Capabilities(), Interfaces: ifaces,
		HeartbeatIntervalSeconds: int(interval / time.Second), Status: hb.Status,
		ActiveTasks: hb.ActiveTasks, MaxTasks: hb.MaxTasks}
	payload, err := wire.NewJSONPayload(&reg)
	if err != nil {
		return fmt.Errorf("registration payload: %w", err)
	}
	at := a.clock.Now().UTC().Truncate(time.Millisecond)
	if !at.After(st.signed) {
		at = st.signed.Add(time.Millisecond)
	}
	m := wire.NewMessage(wire.MsgRegistryRegister, n.self(), wire.AgentRef{}, payload, at)
	if err := wire.Sign(m, a.key); err != nil {
		return fmt.Errorf("sign registration: %w", err)
	}
	body, err := wire.EncodeEnvelopeJSON(m)
	if err != nil {
		return fmt.Errorf("encode registration: %w", err)
	}
	var header http.Header
	if rc.Token != "" {
		header = http.Header{"Authorization": {"Bearer " + rc.Token}}
	}
	ctx, cancel := context.WithTimeout(n.ctx, registerTimeout)
	defer cancel()
	st.signed = at
	r, err := n.post(ctx, st.url+RegistryAgentsPath, wire.ContentJSON, body, header)
	if err != nil {
		return err
	}
	if r.status == http.StatusUnauthorized || r.status == http.StatusForbidden {
		hint := "set registry.token_env to the name of an environment variable holding a token with the registry:write scope on the registry (there: synapse token create NAME --scope registry:write)"
		switch {
		case rc.TokenEnv != "" && rc.Token == "":
			hint = "the environment variable " + rc.TokenEnv + " (registry.token_env) is empty; it must hold a token with the registry:write scope on the registry"
		case rc.Token != "":
			hint = "the registry refused the token from " + rc.TokenEnv + "; it needs the registry:write scope there"
		}
		return fmt.Errorf("%w (%s)", answerError(r), hint)
	}
	if r.status/100 != 2 {
		return answerError(r)
	}
	return nil
}

// report logs the outcome of an attempt when it differs from the last.
func (st *registrarState) report(n *p2pNode, err error) {
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
