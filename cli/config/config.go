// Package config reads the agent's configuration the way `synapse serve`
// does: the defaults, then the JSON config file, then the environment
// (SYNAPSE_* variables and the variables the file names for its secrets);
// the command applies its flags after that. The file holds the values of
// several packages, and each package takes only its own: the engine's
// (agent.Config, at the top level; checked by agent.New) and the
// sections of the others — tier1 and uplink (package tier1; checked
// with the engine's, File.ValidateAgent), handlers (disable_builtins, handlers), http
// (httpapi.Limits), hil, a2a (transport/a2aclient), mqtt
// (transport/mqtt), p2p and registry (peer), tls (internal/tlscert),
// limits (internal/memlimit, whose memory budget also gives
// tier1.max_inflight_bytes its default) — which Load checks, with the rules that tie a section to the agent's values (File.checkMQTT).
// Where the values come from is the command's business, not the
// libraries'.
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/handlers"
	"github.com/synapse-edge/synapse/hil"
	"github.com/synapse-edge/synapse/httpapi"
	"github.com/synapse-edge/synapse/internal/memlimit"
	"github.com/synapse-edge/synapse/internal/selfupdate"
	"github.com/synapse-edge/synapse/internal/tlscert"
	"github.com/synapse-edge/synapse/peer"
	"github.com/synapse-edge/synapse/tier1"
	"github.com/synapse-edge/synapse/tier1/export"
	"github.com/synapse-edge/synapse/tier1/southbound"
	"github.com/synapse-edge/synapse/transport/a2aclient"
	"github.com/synapse-edge/synapse/transport/mqtt"
)

// File is the config file: the agent's values and the handlers' at the
// top level, and the sections of the other packages. Its JSON is written
// in the order the file's keys were written in when tier1 and uplink were
// the agent's: tier1 and uplink after retention (MarshalJSON).
type File struct {
	agent.Config
	// Tier1 is the tier1 section (package tier1): the routines and how
	// frames are stored.
	Tier1 tier1.Config `json:"tier1"`
	// Uplink, if set, names the upstream agent stored tier-1 frames are
	// forwarded to (the export named uplink).
	Uplink *tier1.UplinkConfig `json:"uplink,omitempty"`
	Handlers
	// LogLevel is the level of the log: debug, info (the default), warn
	// or error. serve's --log-level, when given, wins over it.
	LogLevel string           `json:"log_level,omitempty"`
	HTTP     httpapi.Limits   `json:"http"`
	HIL      hil.Config       `json:"hil"`
	A2A      a2aclient.Config `json:"a2a"`
	// MQTT, if set, connects the agent to a broker.
	MQTT *MQTT       `json:"mqtt,omitempty"`
	P2P  peer.Config `json:"p2p"`
	// Registry, if set, names the registry agent this agent registers
	// with.
	Registry *peer.RegistryConfig `json:"registry,omitempty"`
	// TLS, if set with a cert_file, serves the HTTP API (and the gRPC
	// one) over TLS.
	TLS *tlscert.Config `json:"tls,omitempty"`
	// Update, if set, names the release keys self-update trusts
	// (internal/selfupdate).
	Update *selfupdate.Config `json:"update,omitempty"`
	// RemoteConfig, if set, takes signed config fragments from the
	// broker (package cli/remoteconfig; needs the mqtt section).
	RemoteConfig *RemoteConfig `json:"remote_config,omitempty"`
	// Limits is the agent's memory budget (package internal/memlimit).
	Limits memlimit.Config `json:"limits"`
	// Exports are where stored tier-1 batches go (package tier1/export);
	// "uplink" is the shorthand for one, named uplink.
	Exports []export.Config `json:"exports,omitempty"`
}

// Handlers is the handlers' part of the file (its top-level keys
// disable_builtins and handlers), embedded in File under this name.
type Handlers = handlers.Config

// Defaults returns the configuration used when nothing is set.
func Defaults() File {
	f := File{Config: agent.Defaults(), Tier1: tier1.DefaultConfig(), HTTP: httpapi.DefaultLimits(), P2P: peer.DefaultConfig()}
	f.Tier1.MaxInflightBytes = f.Limits.Budgets().Tier1Inflight
	return f
}

// Validate checks every section: the agent's values (as agent.New does)
// with the tier1 and uplink sections (ValidateAgent), the handlers and
// the server's limits, all problems at once.
func (f *File) Validate() error {
	return errors.Join(f.ValidateAgent(f.Config), f.sections())
}

// ValidateAgent checks c, the agent's values (agent.Config.Validate), and
// the tier1 and uplink sections: what serve refuses before it builds the
// agent. The problems come in the order of the file's keys, tier1's and
// uplink's after those of approvals and before those of outbound and
// negotiation, as when the agent checked these sections.
func (f *File) ValidateAgent(c agent.Config) error {
	var t1 []error
	bad := func(field, format string, args ...any) {
		t1 = append(t1, fmt.Errorf("config: %s: %s", field, fmt.Sprintf(format, args...)))
	}
	f.Tier1.Check(func(field, format string, args ...any) { bad("tier1."+field, format, args...) })
	// An endpoint mqtt... is the broker's (package transport/mqtt;
	// checkMQTT checks it against the mqtt section).
	f.Uplink.Check(func(field, format string, args ...any) { bad("uplink."+field, format, args...) })
	var errs []error
	for _, err := range flatten(c.Validate()) {
		if t1 != nil && (strings.HasPrefix(err.Error(), "config: outbound.") || strings.HasPrefix(err.Error(), "config: negotiation.")) {
			errs, t1 = append(errs, t1...), nil
		}
		errs = append(errs, err)
	}
	return errors.Join(append(errs, t1...)...)
}

// sections checks the sections of the packages other than agent.
func (f *File) sections() error {
	return errors.Join(f.checkLogLevel(), f.Limits.Validate(), f.Handlers.Validate(), f.HTTP.Validate(), f.HIL.Validate(), f.A2A.Validate(), f.checkMQTT(),
		f.P2P.Validate(), f.Registry.Validate(), f.TLS.Validate(), f.Update.Validate(), f.checkRemote(), f.checkExports())
}

// MQTT is the "mqtt" section: the broker (transport/mqtt's section) and
// the southbound routes, which turn device messages on the broker into
// tier-1 frames (package tier1/southbound: the wire only delivers them).
type MQTT struct {
	mqtt.Config
	Southbound []southbound.Route `json:"southbound,omitempty"`
}

// checkExports checks the exports list, with the uplink shorthand's name
// and the mqtt section an mqtt:// export needs.
func (f *File) checkExports() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("config: %s: %s", field, fmt.Sprintf(format, args...)))
	}
	export.Check(f.Exports, bad)
	for i, e := range f.Exports {
		if f.Uplink != nil && e.Name == export.UplinkName {
			bad(fmt.Sprintf("exports[%d].name", i), "%q is the uplink section's export; name this one otherwise", e.Name)
		}
		if strings.HasPrefix(e.Endpoint, "mqtt") && (f.MQTT == nil || e.Endpoint != mqtt.UplinkToBroker) {
			bad(fmt.Sprintf("exports[%d].endpoint", i), "%q: an export to the broker is %q, with the mqtt section (the broker's address goes in mqtt.url)", e.Endpoint, mqtt.UplinkToBroker)
		}
	}
	if f.Tier1.ExportBandwidthBytesPerS < 0 {
		bad("tier1.export_bandwidth_bytes_per_s", "must not be negative")
	}
	return errors.Join(errs...)
}

// Load returns the configuration of the file at path (none when path is
// empty) and the environment read through getenv, on top of the defaults.
// It checks the sections of the packages other than agent; agent.New
// checks the agent's values (after the command's flags).
func Load(path string, getenv func(string) string) (File, error) {
	f, _, err := LoadHashed(path, getenv)
	return f, err
}

// LoadHashed is Load that also returns the SHA-256 (hex) of the file's
// bytes it read (empty without a file).
func LoadHashed(path string, getenv func(string) string) (File, string, error) {
	return LoadOverlaid(path, nil, getenv)
}

// LoadOverlaid is LoadHashed with a remote config fragment (nil: none)
// decoded over the file (decodeOverlay); the hash is then
// OverlaidHash's.
func LoadOverlaid(path string, overlay []byte, getenv func(string) string) (File, string, error) {
	f := Defaults()
	var hash string
	if path != "" {
		raw, err := readFile(path)
		if err != nil {
			return f, "", err
		}
		hash = OverlaidHash(raw, overlay)
		if err := decodeFile(&f, path, raw); err != nil {
			return f, hash, err
		}
		if err := decodeOverlay(&f, path, overlay); err != nil {
			return f, hash, err
		}
	}
	if err := LoadEnv(&f, getenv); err != nil {
		return f, hash, err
	}
	return f, hash, f.sections()
}

// LoadFile merges the JSON file at path into f. Unknown fields are errors,
// so a misspelt option is not silently ignored.
func LoadFile(f *File, path string) error {
	raw, err := readFile(path)
	if err != nil {
		return err
	}
	return decodeFile(f, path, raw)
}

// decodeFile merges raw, the content of the file at path, into f.
func decodeFile(f *File, path string, raw []byte) error {
	d := json.NewDecoder(strings.NewReader(string(raw)))
	d.DisallowUnknownFields()
	// tier1.max_inflight_bytes, unless the file sets it, is the memory
	// budget's (limits.memory_mb).
	f.Tier1.MaxInflightBytes = 0
	if err := d.Decode(f); err != nil {
		return decodeError(path, raw, d.InputOffset(), err)
	}
	if f.Tier1.MaxInflightBytes == 0 {
		lim := f.Limits
		if lim.Validate() != nil { // reported by Validate; the default meanwhile
			lim = memlimit.Config{}
		}
		f.Tier1.MaxInflightBytes = lim.Budgets().Tier1Inflight
	}
	if d.More() {
		return fmt.Errorf("config %s: more than one JSON value (a file holds one object)", path)
	}
	resolvePaths(f, path)
	return nil
}

// resolvePaths makes the relative paths of f relative to the directory of
// the config file at path.
func resolvePaths(f *File, path string) {
	// Relative command paths and dirs are relative to the config file.
	base := filepath.Dir(path)
	f.Update.SetDir(base)
	for i := range f.Commands {
		h := &f.Commands[i]
		if len(h.Command) > 0 && strings.Contains(h.Command[0], "/") && !filepath.IsAbs(h.Command[0]) {
			h.Command[0] = filepath.Join(base, h.Command[0])
		}
		if h.Dir != "" && !filepath.IsAbs(h.Dir) {
			h.Dir = filepath.Join(base, h.Dir)
		}
	}
	if f.TLS != nil {
		for _, p := range []*string{&f.TLS.CertFile, &f.TLS.KeyFile, &f.TLS.ClientCAFile, &f.TLS.PeerCAFile} {
			if *p != "" && !filepath.IsAbs(*p) {
				*p = filepath.Join(base, *p)
			}
		}
	}
	if f.MQTT != nil {
		for _, p := range []*string{&f.MQTT.CAFile, &f.MQTT.CertFile, &f.MQTT.KeyFile} {
			if *p != "" && !filepath.IsAbs(*p) {
				*p = filepath.Join(base, *p)
			}
		}
	}
}

// LoadEnv applies SYNAPSE_* environment variables, and the variables the
// file names for secrets (token_env, password_env, secret_envs, ...),
// through getenv.
func LoadEnv(f *File, getenv func(string) string) error {
	c := &f.Config
	str := map[string]*string{
		"SYNAPSE_DATA":        &c.DataDir,
		"SYNAPSE_LISTEN":      &c.Listen,
		"SYNAPSE_AGENT_ID":    &c.AgentID,
		"SYNAPSE_AGENT_NAME":  &c.AgentName,
		"SYNAPSE_SYSTEM_ID":   &c.SystemID,
		"SYNAPSE_ENDPOINT":    &c.Endpoint,
		"SYNAPSE_ADMIN_TOKEN": &c.AdminToken,
	}
	for k, p := range str {
		if v := getenv(k); v != "" {
			*p = v
		}
	}
	if u := f.Uplink; u != nil && u.TokenEnv != "" {
		u.Token = getenv(u.TokenEnv)
	}
	for i := range f.Exports {
		if env := f.Exports[i].TokenEnv; env != "" {
			f.Exports[i].Token = getenv(env)
		}
	}
	for i := range f.A2A.Peers {
		if env := f.A2A.Peers[i].TokenEnv; env != "" {
			f.A2A.Peers[i].Token = getenv(env)
		}
	}
	if f.MQTT != nil && f.MQTT.PasswordEnv != "" {
		f.MQTT.Password = getenv(f.MQTT.PasswordEnv)
	}
	if f.P2P.CallbackSecretEnv != "" {
		f.P2P.CallbackSecret = getenv(f.P2P.CallbackSecretEnv)
	}
	for i := range f.P2P.PeerSecrets {
		ps := &f.P2P.PeerSecrets[i]
		ps.Secrets = nil
		for _, env := range ps.SecretEnvs {
			if v := getenv(env); v != "" {
				ps.Secrets = append(ps.Secrets, []byte(v))
			}
		}
	}
	if v := getenv("SYNAPSE_OUTBOUND_ALLOW"); v != "" {
		c.Outbound.Allow = nil
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				c.Outbound.Allow = append(c.Outbound.Allow, s)
			}
		}
	}
	if llm := c.Negotiation.LLM; llm != nil && llm.APIKeyEnv != "" {
		llm.APIKey = getenv(llm.APIKeyEnv)
	}
	if r := f.Registry; r != nil && r.TokenEnv != "" {
		r.Token = getenv(r.TokenEnv)
	}
	ints := map[string]*int{
		"SYNAPSE_MAX_CONCURRENT_TASKS":      &c.MaxConcurrentTasks,
		"SYNAPSE_MAX_TASK_DURATION_SECONDS": &c.MaxTaskDurationSeconds,
		"SYNAPSE_MAX_PARKED_TASKS":          &c.MaxParkedTasks,
	}
	for k, p := range ints {
		if v := getenv(k); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("config: %s=%q is not a whole number", k, v)
			}
			*p = n
		}
	}
	return nil
}

// Level is the log level the file sets, and whether it sets one.
func (f *File) Level() (slog.Level, bool) {
	var lv slog.Level
	if f.LogLevel == "" || lv.UnmarshalText([]byte(f.LogLevel)) != nil {
		return slog.LevelInfo, false
	}
	return lv, true
}

// checkLogLevel checks log_level.
func (f *File) checkLogLevel() error {
	switch strings.ToLower(f.LogLevel) {
	case "", "debug", "info", "warn", "error":
		return nil
	}
	return fmt.Errorf("config: log_level: %q is not debug, info, warn or error", f.LogLevel)
}

// checkMQTT checks the mqtt section and what it constrains in the agent's
// values: the identifiers that name topic levels, and an uplink to the
// broker.
func (f *File) checkMQTT() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("config: %s: %s", field, fmt.Sprintf(format, args...)))
	}
	m, u := f.MQTT, f.Uplink
	if m == nil {
		if u != nil && strings.HasPrefix(u.Endpoint, "mqtt") {
			bad("uplink.endpoint", "%q needs the mqtt section (the broker's address goes in mqtt.url)", u.Endpoint)
		}
		return errors.Join(errs...)
	}
	errs = append(errs, m.Validate())
	// The southbound routes are compiled against the built-in routine and
	// the tier1 section's (whose own problems are that section's to report).
	if reg, err := tier1.NewRegistry(append([]tier1.Descriptor{tier1.Telemetry()}, f.Tier1.Routines...)...); err == nil {
		if _, err := southbound.CompileAll(m.Southbound, reg); err != nil {
			field, msg, _ := strings.Cut(err.Error(), ": ")
			bad(field, "%s", msg)
		}
	}
	// These name topic levels: a wildcard in them would address others.
	for _, id := range []struct{ field, v string }{{"agent_id", f.AgentID}, {"agent_name", f.AgentName}, {"system_id", f.SystemID}} {
		if strings.ContainsAny(id.v, "+#") {
			bad(id.field, "%q must not contain + or # with the mqtt section (it is a topic level)", id.v)
		}
	}
	if u != nil && strings.HasPrefix(u.Endpoint, "mqtt") && u.Endpoint != mqtt.UplinkToBroker {
		bad("uplink.endpoint", "%q: to send to the broker write %q; the broker's address goes in mqtt.url", u.Endpoint, mqtt.UplinkToBroker)
	}
	return errors.Join(errs...)
}

// MarshalJSON writes f as its fields would, with the keys tier1 and
// uplink moved to just after retention: where they stood when they were
// the agent's (agent.Config), so that the JSON of a File is the same
// bytes it always was.
func (f File) MarshalJSON() ([]byte, error) {
	type plain File // f's fields, without this method
	// Unescaped: the encoder this is written through escapes <, > and &
	// when it does (json.Marshal), and not when it does not.
	var raw bytes.Buffer
	e := json.NewEncoder(&raw)
	e.SetEscapeHTML(false)
	if err := e.Encode(plain(f)); err != nil {
		return nil, err
	}
	d := json.NewDecoder(&raw)
	if _, err := d.Token(); err != nil { // {
		return nil, err
	}
	type member struct {
		key string
		val json.RawMessage
	}
	var ms []member
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return nil, err
		}
		m := member{key: k.(string)}
		if err := d.Decode(&m.val); err != nil {
			return nil, err
		}
		ms = append(ms, m)
	}
	var b bytes.Buffer
	b.WriteByte('{')
	put := func(m member) {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(m.val)
	}
	for _, m := range ms {
		if m.key != "tier1" && m.key != "uplink" {
			put(m)
		}
		if m.key == "retention" {
			for _, t := range ms {
				if t.key == "tier1" || t.key == "uplink" {
					put(t)
				}
			}
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
