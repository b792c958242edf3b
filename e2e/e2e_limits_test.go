package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestMsgpackHugeLengthRefused sends msgpack bodies that declare 2^32-1
// elements or bytes in five bytes (SPEC §11): each must be refused with 400
// at once, without the agent allocating for the declared length.
func TestMsgpackHugeLengthRefused(t *testing.T) {
	a := startAgent(t, agentOpts{})
	// Warm up so that the RSS baseline includes the server's normal buffers.
	for range 20 {
		a.submit(http.StatusCreated, `{"task_type":"echo","payload":{"warm":true}}`)
	}
	const maxGrowth = 16 << 20
	before := rssBytes(t, a.pid())
	for _, tc := range []struct {
		name string
		body []byte
	}{
		{"array32", []byte{0xdd, 0xff, 0xff, 0xff, 0xff}},
		{"map32", []byte{0xdf, 0xff, 0xff, 0xff, 0xff}},
		{"str32", []byte{0xdb, 0xff, 0xff, 0xff, 0xff}},
		{"bin32", []byte{0xc6, 0xff, 0xff, 0xff, 0xff}},
		{"map with array32 value", append([]byte{0x81, 0xa7, 'p', 'a', 'y', 'l', 'o', 'a', 'd'}, 0xdd, 0xff, 0xff, 0xff, 0xff)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 10 {
				start := time.Now()
				r := a.call(http.MethodPost, prefix+"/task", tc.body, "Content-Type", "application/msgpack")
				took := time.Since(start)
				if r.status != http.StatusBadRequest {
					t.Fatalf("got %s, want 400", r)
				}
				if took > time.Second {
					t.Errorf("the answer took %s, want under 1s", took.Round(time.Millisecond))
				}
				var eb struct {
					Error struct {
						Code string `json:"code"`
					} `json:"error"`
				}
				if err := json.Unmarshal(r.body, &eb); err != nil || eb.Error.Code != "message_format_invalid" {
					t.Errorf("got error body %s, want code message_format_invalid", r.body)
				}
			}
		})
	}
	after := rssBytes(t, a.pid())
	t.Logf("VmRSS %d KiB before, %d KiB after", before>>10, after>>10)
	if after-before >= maxGrowth {
		t.Errorf("VmRSS grew by %d KiB, want less than %d KiB", (after-before)>>10, maxGrowth>>10)
	}
	if r := a.call(http.MethodGet, prefix+"/health", nil); r.status != http.StatusOK {
		t.Errorf("health after the bodies: %s", r)
	}
	a.stop()
}

// TestOnlineBackup takes "synapse db backup" from a serving agent while
// tasks are being submitted; the copy must pass "synapse db check" and hold
// every task finished before the backup began.
func TestOnlineBackup(t *testing.T) {
	a := startAgent(t, agentOpts{})
	const before = 20
	for i := range before {
		r := a.call(http.MethodPost, prefix+"/task?wait=10", fmt.Appendf(nil, `{"task_type":"echo","payload":{"i":%d}}`, i))
		if r.status != http.StatusOK {
			t.Fatalf("POST /task?wait=10: got %s, want 200", r)
		}
	}
	// Writes go on during the backup.
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	var during int
	go func() {
		defer wg.Done()
		hc := newClient(1, requestTimeout)
		defer hc.CloseIdleConnections()
		for i := 0; i < 10_000 && ctx.Err() == nil; i++ {
			r, err := a.send(ctx, hc, http.MethodPost, prefix+"/task", []byte(`{"task_type":"echo","payload":{"during":true}}`))
			if err == nil && r.status == http.StatusCreated {
				during++
			}
		}
	}()

	backupDir := t.TempDir()
	out := filepath.Join(backupDir, "synapse.db")
	code, stdout, stderr := runCLI(t, 60*time.Second, "db", "backup", "--agent", a.url(), "--token", a.token,
		"--data", a.dataDir, "--out", out, "--json")
	cancel()
	wg.Wait()
	if code != 0 {
		t.Fatalf("synapse db backup: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	var res struct {
		Bytes  int64  `json:"bytes"`
		Source string `json:"source"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("db backup --json: %v in %s", err, stdout)
	}
	if res.Source != "agent" || res.Bytes <= 0 {
		t.Errorf("db backup: got source %q bytes %d, want a copy from the agent", res.Source, res.Bytes)
	}
	t.Logf("backup of %d bytes; %d tasks submitted while it ran", res.Bytes, during)

	code, stdout, stderr = runCLI(t, 30*time.Second, "db", "check", "--offline", "--data", backupDir, "--json")
	if code != 0 {
		t.Fatalf("synapse db check of the backup: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	var rep struct {
		OK    bool     `json:"ok"`
		Tasks int      `json:"tasks"`
		Errs  []string `json:"errors"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("db check --json: %v in %s", err, stdout)
	}
	if !rep.OK || rep.Tasks < before {
		t.Errorf("db check of the backup: got ok=%v tasks=%d errors=%v, want ok with at least %d tasks", rep.OK, rep.Tasks, rep.Errs, before)
	}
	a.stop()
}
