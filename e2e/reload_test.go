package e2e_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The reload of the config file without a restart (issue 32): SIGHUP and
// POST /admin/reload, against the real binary.

// reloadView is what the tests read of /health's config and of a
// reload's answer.
type reloadView struct {
	Time            time.Time `json:"time"`
	Result          string    `json:"result"`
	Trigger         string    `json:"trigger"`
	ConfigHash      string    `json:"config_hash"`
	Problems        []string  `json:"problems"`
	Applied         []string  `json:"applied"`
	RestartRequired []string  `json:"restart_required"`
}

type healthView struct {
	Status string `json:"status"`
	Config *struct {
		File       string      `json:"file"`
		Hash       string      `json:"hash"`
		LastReload *reloadView `json:"last_reload"`
	} `json:"config"`
}

// writeConfig replaces the config file at path with body and returns the
// SHA-256 of its bytes.
func writeConfig(t *testing.T, path, body string) string {
	t.Helper()
	// A new file renamed over the old one, as editors and deployment
	// tools write it: the agent never reads half of it.
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(body))
	return hex.EncodeToString(sum[:])
}

func (a *agentProc) health() healthView {
	a.t.Helper()
	r := a.call(http.MethodGet, prefix+"/health", nil)
	var h healthView
	if r.status != http.StatusOK || json.Unmarshal(r.body, &h) != nil {
		a.t.Fatalf("GET /health: %s", r)
	}
	return h
}

// sighup sends SIGHUP and waits until /health shows a reload newer than
// the last one before the signal, which it returns. (A time taken by the
// test would not do: a reload by the API a moment before counts as newer
// than any margin for the clocks.)
func (a *agentProc) sighup() reloadView {
	a.t.Helper()
	var last time.Time
	if h := a.health(); h.Config != nil && h.Config.LastReload != nil {
		last = h.Config.LastReload.Time
	}
	if err := syscall.Kill(a.pid(), syscall.SIGHUP); err != nil {
		a.t.Fatal(err)
	}
	deadline := time.Now().Add(healthTimeout)
	for time.Now().Before(deadline) {
		if h := a.health(); h.Config != nil && h.Config.LastReload != nil && h.Config.LastReload.Time.After(last) {
			return *h.Config.LastReload
		}
		time.Sleep(pollEvery)
	}
	a.t.Fatalf("no reload after SIGHUP within %s\noutput:\n%s", healthTimeout, a.stderr())
	return reloadView{}
}

// waitLog waits until the agent's output holds want (the output reaches
// the test through a pipe, after the answer that caused it, maybe).
func (a *agentProc) waitLog(want string) bool {
	a.t.Helper()
	deadline := time.Now().Add(healthTimeout)
	for !strings.Contains(a.stderr(), want) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pollEvery)
	}
	return true
}

// apiReload is POST /admin/reload; want is the expected status.
func (a *agentProc) apiReload(want int) reloadView {
	a.t.Helper()
	r := a.call(http.MethodPost, prefix+"/admin/reload", nil)
	var v reloadView
	if r.status != want || json.Unmarshal(r.body, &v) != nil {
		a.t.Fatalf("POST /admin/reload: %s, want status %d", r, want)
	}
	return v
}

// sleeper submits a sleep task of a minute and returns the status of the
// answer: 201 when it got a slot, 429 when max_concurrent_tasks refused
// it.
func (a *agentProc) sleeper() int {
	a.t.Helper()
	return a.call(http.MethodPost, prefix+"/task", []byte(`{"task_type":"sleep","payload":{"ms":60000}}`)).status
}

// maxBytes is the tier-1 telemetry routine's max_bytes in GET
// /tier1/routines: tier1.max_bytes_per_routine in force.
func (a *agentProc) maxBytes() int64 {
	a.t.Helper()
	r := a.call(http.MethodGet, prefix+"/tier1/routines", nil)
	var v struct {
		Routines []struct {
			ID     string `json:"capability_id"`
			Stored struct {
				MaxBytes int64 `json:"max_bytes"`
			} `json:"stored"`
		} `json:"routines"`
	}
	if r.status != http.StatusOK || json.Unmarshal(r.body, &v) != nil || len(v.Routines) == 0 {
		a.t.Fatalf("GET /tier1/routines: %s", r)
	}
	return v.Routines[0].Stored.MaxBytes
}

// TestReloadLive changes max_concurrent_tasks, the log level, tier-1's
// cap per routine and an export's bandwidth cap (and the global one) of a
// running agent, with SIGHUP and then with the API: a task over the old
// limit now runs, debug lines appear and stop, the caps are the new ones. A field that needs a restart is named and not
// applied.
func TestReloadLive(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "synapse.json")
	hash0 := writeConfig(t, cfg, `{"max_concurrent_tasks": 1, "log_level": "info", "tier1": {"max_bytes_per_routine": 1000000, "export_bandwidth_bytes_per_s": 5000},
		"exports": [{"name": "cloud", "endpoint": "http://127.0.0.1:1", "bandwidth_bytes_per_s": 1000}]}`)
	a := startAgent(t, agentOpts{args: []string{"--config", cfg, "--grace", "1s"}})

	h := a.health()
	if h.Config == nil || h.Config.File != cfg || h.Config.Hash != hash0 || h.Config.LastReload != nil {
		t.Fatalf("health before any reload: %+v, want file %s hash %s and no reload", h.Config, cfg, hash0)
	}
	if got := metricValue(t, a, `synapse_config_info{hash="`+hash0+`"}`); got != 1 {
		t.Errorf("synapse_config_info of the start file = %v, want 1", got)
	}
	if got := a.exportCap("cloud"); got != 1000 {
		t.Fatalf("export cloud's bandwidth_bytes_per_s = %d at start, want 1000", got)
	}
	// The admin scope only.
	tok := a.call(http.MethodPost, prefix+"/tokens", []byte(`{"name":"ops","scopes":["tasks:read","tasks:write","metrics"]}`))
	var created struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal(tok.body, &created); err != nil || created.Token == "" {
		t.Fatalf("POST /tokens: %s", tok)
	}
	req, _ := http.NewRequest(http.MethodPost, a.url()+prefix+"/admin/reload", nil)
	req.Header.Set("Authorization", "Bearer "+created.Token)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("POST /admin/reload without the admin scope: %v %v, want 403", resp, err)
	} else {
		resp.Body.Close()
	}
	if got := a.sleeper(); got != http.StatusCreated {
		t.Fatalf("first sleep task: %d, want 201", got)
	}
	if got := a.sleeper(); got != http.StatusTooManyRequests {
		t.Fatalf("second sleep task with max_concurrent_tasks 1: %d, want 429", got)
	}
	if strings.Contains(a.stderr(), "task submitted") {
		t.Fatalf("debug lines at level info:\n%s", a.stderr())
	}

	t.Run("sighup", func(t *testing.T) {
		hash1 := writeConfig(t, cfg, `{"max_concurrent_tasks": 2, "log_level": "debug", "tier1": {"max_bytes_per_routine": 2000000, "export_bandwidth_bytes_per_s": 6000},
			"exports": [{"name": "cloud", "endpoint": "http://127.0.0.1:1", "bandwidth_bytes_per_s": 2000}]}`)
		before := time.Now()
		r := a.sighup()
		want := []string{"exports", "log_level", "max_concurrent_tasks", "tier1.export_bandwidth_bytes_per_s", "tier1.max_bytes_per_routine"}
		if r.Result != "ok" || r.Trigger != "sighup" || r.ConfigHash != hash1 || !slices.Equal(r.Applied, want) || len(r.RestartRequired) != 0 {
			t.Fatalf("reload by SIGHUP: %+v, want ok, hash %s, applied %v, nothing to restart", r, hash1, want)
		}
		if got := a.sleeper(); got != http.StatusCreated {
			t.Errorf("second sleep task after max_concurrent_tasks 2: %d, want 201", got)
		}
		if !a.waitLog("level=DEBUG msg=\"task submitted\"") {
			t.Errorf("no debug line after log_level debug:\n%s", a.stderr())
		}
		if got := a.maxBytes(); got != 2000000 {
			t.Errorf("tier-1 max_bytes = %d, want 2000000", got)
		}
		if got := a.exportCap("cloud"); got != 2000 {
			t.Errorf("export cloud's bandwidth_bytes_per_s = %d after the reload, want 2000", got)
		}
		if h := a.health(); h.Config.Hash != hash1 {
			t.Errorf("health hash %s, want %s", h.Config.Hash, hash1)
		}
		if got := metricValue(t, a, `synapse_config_reload_total{result="ok"}`); got != 1 {
			t.Errorf("reloads ok = %v, want 1", got)
		}
		if got := metricValue(t, a, `synapse_config_info{hash="`+hash1+`"}`); got != 1 {
			t.Errorf("synapse_config_info{hash=%s} = %v, want 1", hash1, got)
		}
		if ts := metricValue(t, a, "synapse_config_last_reload_success_timestamp_seconds"); ts < float64(before.Add(-time.Minute).Unix()) {
			t.Errorf("last success timestamp %v, want about %d", ts, before.Unix())
		}
	})

	t.Run("api", func(t *testing.T) {
		// max_file_size needs a restart (the HTTP server's body limit is
		// set when it starts): reported, not applied.
		hash2 := writeConfig(t, cfg, `{"max_concurrent_tasks": 3, "log_level": "warn", "max_file_size": 5000000, "tier1": {"max_bytes_per_routine": 2000000, "export_bandwidth_bytes_per_s": 6000},
			"exports": [{"name": "cloud", "endpoint": "http://127.0.0.1:1", "bandwidth_bytes_per_s": 2000}]}`)
		r := a.apiReload(http.StatusOK)
		if r.Result != "ok" || r.Trigger != "api" || r.ConfigHash != hash2 || !slices.Equal(r.Applied, []string{"log_level", "max_concurrent_tasks"}) ||
			!slices.Equal(r.RestartRequired, []string{"max_file_size"}) {
			t.Fatalf("reload by the API: %+v, want ok, applied log_level and max_concurrent_tasks, max_file_size to restart", r)
		}
		if !a.waitLog("restart_required=max_file_size") {
			t.Errorf("the log does not name the field that needs a restart:\n%s", a.stderr())
		}
		caps := a.call(http.MethodGet, prefix+"/capabilities", nil)
		var c struct {
			MaxFileSize int64 `json:"max_file_size"`
			MaxTasks    int   `json:"max_concurrent_tasks"`
		}
		if err := json.Unmarshal(caps.body, &c); err != nil || c.MaxFileSize != 10<<20 || c.MaxTasks != 3 {
			t.Errorf("capabilities %s: want max_file_size still 10485760 and max_concurrent_tasks 3", caps)
		}
		debugLines := strings.Count(a.stderr(), "task submitted")
		if got := a.sleeper(); got != http.StatusCreated {
			t.Errorf("third sleep task after max_concurrent_tasks 3: %d, want 201", got)
		}
		if got := a.sleeper(); got != http.StatusTooManyRequests {
			t.Errorf("fourth sleep task with max_concurrent_tasks 3: %d, want 429", got)
		}
		if n := strings.Count(a.stderr(), "task submitted"); n != debugLines {
			t.Errorf("debug lines went on at level warn: %d, then %d", debugLines, n)
		}
	})

	t.Run("bad files change nothing", func(t *testing.T) {
		good := a.health().Config.Hash
		for _, tc := range []struct{ name, body, want string }{
			{"syntax", "{\n  \"max_concurrent_tasks\": 9,,\n}", "synapse.json:2:29: invalid character ','"},
			{"unknown key", `{"max_concurent_tasks": 9}`, `unknown key "max_concurent_tasks"`},
			{"wrong type", `{"max_concurrent_tasks": "nine"}`, "max_concurrent_tasks: a JSON string is not a int"},
			{"bad value", `{"max_concurrent_tasks": 0}`, "max_concurrent_tasks: 0 is outside 1..100000"},
			{"bad log level", `{"max_concurrent_tasks": 9, "log_level": "loud"}`, `log_level: "loud" is not debug, info, warn or error`},
			{"two objects", `{"max_concurrent_tasks": 9} {}`, "more than one JSON value"},
			{"empty file", ``, "EOF"},
			{"tier1 cap", `{"max_concurrent_tasks": 9, "tier1": {"max_bytes_per_routine": 0}}`, "tier1.max_bytes_per_routine: must be at least 1"},
			{"approval rule", `{"max_concurrent_tasks": 9, "approvals": [{"task_type": ""}]}`, "approvals[0].task_type: must not be empty"},
			{"restart-only section", `{"max_concurrent_tasks": 9, "listen": "nope"}`, `listen: "nope" is not HOST:PORT`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				hash := writeConfig(t, cfg, tc.body)
				r := a.apiReload(http.StatusUnprocessableEntity)
				if r.Result != "invalid" || r.ConfigHash != hash || len(r.Problems) != 1 || !strings.Contains(r.Problems[0], tc.want) ||
					len(r.Applied) != 0 || len(r.RestartRequired) != 0 {
					t.Errorf("reload of a bad file: %+v, want invalid with the one problem %q", r, tc.want)
				}
			})
		}
		// Several problems at once are all named, by SIGHUP as by the API.
		writeConfig(t, cfg, `{"max_concurrent_tasks": 0, "max_task_duration_seconds": -1, "retention": {"keep_finished": 0}}`)
		r := a.sighup()
		if r.Result != "invalid" || r.Trigger != "sighup" || len(r.Problems) != 3 {
			t.Errorf("SIGHUP with three problems: %+v", r)
		}
		if !a.waitLog("retention.keep_finished: must be at least 1") {
			t.Errorf("the log does not say why the reload was refused:\n%s", a.stderr())
		}
		// A missing file is a problem too.
		if err := os.Remove(cfg); err != nil {
			t.Fatal(err)
		}
		if r := a.apiReload(http.StatusUnprocessableEntity); len(r.Problems) != 1 || !strings.Contains(r.Problems[0], "no such file") {
			t.Errorf("reload of a removed file: %+v", r)
		}
		// Nothing changed: the limit is still 3, the level warn, the
		// file in force the last good one.
		if got := a.sleeper(); got != http.StatusTooManyRequests {
			t.Errorf("a sleep task after the bad files: %d, want 429 (max_concurrent_tasks still 3)", got)
		}
		if h := a.health(); h.Config.Hash != good || h.Config.LastReload.Result != "invalid" {
			t.Errorf("health after the bad files: hash %s (want %s), last %+v", h.Config.Hash, good, h.Config.LastReload)
		}
		if got := metricValue(t, a, `synapse_config_reload_total{result="invalid"}`); got != 12 {
			t.Errorf("reloads invalid = %v, want 12", got)
		}
		if got := metricValue(t, a, `synapse_config_info{hash="`+good+`"}`); got != 1 {
			t.Errorf("synapse_config_info of the file in force = %v, want 1", got)
		}
		if h := a.health(); h.Status != "SERVING" {
			t.Errorf("health after the bad files: %s, want SERVING", h.Status)
		}
	})
}

// TestReloadWithoutFile: an agent started without --config has nothing to
// reload; SIGHUP does not stop it, and the API says why.
func TestReloadWithoutFile(t *testing.T) {
	a := startAgent(t, agentOpts{})
	if err := syscall.Kill(a.pid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if !a.waitLog("there is no file to reload") {
		t.Fatalf("no log line after SIGHUP\noutput:\n%s", a.stderr())
	}
	if r := a.call(http.MethodPost, prefix+"/admin/reload", nil); r.status != http.StatusServiceUnavailable || !strings.Contains(string(r.body), "no configuration file") {
		t.Errorf("POST /admin/reload without a file: %s, want 503", r)
	}
	if h := a.health(); h.Status != "SERVING" || h.Config != nil {
		t.Errorf("health after SIGHUP: %+v, want SERVING without config", h)
	}
}

// exportCap is the bandwidth_bytes_per_s GET /tier1/exports shows for the
// export name (-1 when it is not listed).
func (a *agentProc) exportCap(name string) int64 {
	a.t.Helper()
	var body struct {
		Exports []struct {
			Name string `json:"name"`
			Cap  int64  `json:"bandwidth_bytes_per_s"`
		} `json:"exports"`
	}
	r := a.call(http.MethodGet, prefix+"/tier1/exports", nil)
	if err := json.Unmarshal(r.body, &body); err != nil {
		a.t.Fatalf("GET /tier1/exports: %v in %s", err, r)
	}
	for _, e := range body.Exports {
		if e.Name == name {
			return e.Cap
		}
	}
	return -1
}
