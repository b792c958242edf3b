package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/internal/testutil"
)

// TestExportsCursorsAcrossRestarts is issue 29's second showing, with
// real processes: agent A exports to B (priority 1, 200 kB/s) and to C
// (priority 5, 20 kB/s). Each export keeps its own cursor through a
// kill -9 of A: the slow one holds nothing of the fast one, and A's sent
// counters (committed with the cursors) are exact. Then, C down, A is
// restarted with two exports added: D with start all gets the history the
// log holds (what C has not had), E with start new only what comes after.
func TestExportsCursorsAcrossRestarts(t *testing.T) {
	b, c := startAgent(t, agentOpts{}), startAgent(t, agentOpts{})
	d, e := startAgent(t, agentOpts{}), startAgent(t, agentOpts{})
	dir := t.TempDir()
	write := func(name string, exports ...string) string {
		p := filepath.Join(dir, name)
		body := `{"exports":[` + exports[0]
		for _, x := range exports[1:] {
			body += "," + x
		}
		if err := os.WriteFile(p, []byte(body+`]}`), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	xb := fmt.Sprintf(`{"name":"b","endpoint":"http://%s","token_env":"TB","priority":1,"bandwidth_bytes_per_s":200000,"max_backoff_ms":200}`, b.Addr)
	xc := fmt.Sprintf(`{"name":"c","endpoint":"ws://%s","token_env":"TC","priority":5,"bandwidth_bytes_per_s":20000,"max_backoff_ms":200}`, c.Addr)
	xd := fmt.Sprintf(`{"name":"d","endpoint":"http://%s","token_env":"TD","start":"all"}`, d.Addr)
	xe := fmt.Sprintf(`{"name":"e","endpoint":"http://%s","token_env":"TE","start":"new"}`, e.Addr)
	env := []string{"TB=" + b.token, "TC=" + c.token, "TD=" + d.token, "TE=" + e.token}
	a := startAgent(t, agentOpts{args: []string{"--config", write("a1.json", xb, xc)}, env: env})
	hc := newClient(1, 5*time.Second)
	defer hc.CloseIdleConnections()
	status := func() map[string]exportStatus {
		t.Helper()
		st, ok := exportsOf(a, hc)
		if !ok {
			t.Fatal("GET /tier1/exports failed")
		}
		return st
	}

	ingestT1(t, a, "h", 0, 40, 100) // ~4 kB a batch: C needs ~8 s for them
	testutil.Eventually(t, 30*time.Second, "B has all", func() bool { return status()["b"].BacklogFrames == 0 })
	if st := status()["c"]; st.SentFrames == 0 || st.BacklogFrames == 0 {
		t.Fatalf("C (20 kB/s) should be part way: %+v", st)
	}
	a.kill()
	a.start()
	ingestT1(t, a, "h", 40, 10, 100)
	testutil.Eventually(t, 60*time.Second, "both have all", func() bool {
		st := status()
		return st["b"].BacklogFrames == 0 && st["c"].BacklogFrames == 0
	})
	for _, x := range []string{"b", "c"} {
		if st := status()[x]; st.SentFrames != 5000 || st.DroppedFrames != 0 {
			t.Errorf("%s: sent %d dropped %d, want 5000 0 (its cursor held through kill -9)", x, st.SentFrames, st.DroppedFrames)
		}
	}
	checkOnceInOrder(t, storedSeqs(t, b, "h"), 5000)
	checkOnceInOrder(t, storedSeqs(t, c, "h"), 5000)

	// C down: what A stores now waits in the log for it.
	c.kill()
	ingestT1(t, a, "h", 50, 20, 100)
	a.stop()
	a.SetArgs("--config", write("a2.json", xb, xc, xd, xe))
	a.start()
	ingestT1(t, a, "n", 1000, 5, 100) // after D and E were added (batch ids d-1000...)
	testutil.Eventually(t, 30*time.Second, "D and E sent", func() bool {
		st := status()
		return st["d"].BacklogFrames == 0 && st["e"].BacklogFrames == 0
	})
	if got := len(storedSeqs(t, d, "h")); got != 2000 {
		t.Errorf("D (start all) has %d history frames, want the 2000 the log held for C", got)
	}
	if got := len(storedSeqs(t, e, "h")); got != 0 {
		t.Errorf("E (start new) has %d history frames, want none", got)
	}
	for _, x := range []*agentProc{d, e} {
		if got := len(storedSeqs(t, x, "n")); got != 500 {
			t.Errorf("%d new frames at an added export, want 500", got)
		}
	}
	if st := status()["c"]; st.BacklogFrames != 2500 || st.State != "backing_off" {
		t.Errorf("C (down): %+v, want 2500 frames waiting", st)
	}

	// The routes: a tier1:read token reads the status but may not pause
	// (admin); unknown names and bad paths are refused.
	r := a.call(http.MethodPost, prefix+"/tokens", []byte(`{"name":"viewer","scopes":["tier1:read"]}`))
	var tok struct {
		Token string `json:"token"`
	}
	if r.status != http.StatusCreated || json.Unmarshal(r.body, &tok) != nil {
		t.Fatalf("POST /tokens: %v", r)
	}
	viewer := &agentProc{Agent: a.Agent, t: t, token: tok.Token}
	for _, c := range []struct {
		who          *agentProc
		method, path string
		want         int
	}{
		{viewer, "GET", "/tier1/exports", 200},
		{viewer, "POST", "/tier1/exports/b/pause", 403},
		{a, "POST", "/tier1/exports/nope/pause", 404},
		{a, "POST", "/tier1/exports/b/stop", 404},
		{a, "GET", "/tier1/exports/b/pause", 405},
		{a, "POST", "/tier1/exports/b/pause", 200},
		{a, "POST", "/tier1/exports/b/resume", 200},
	} {
		if r := c.who.call(c.method, prefix+c.path, nil); r.status != c.want {
			t.Errorf("%s %s: %d %s, want %d", c.method, c.path, r.status, r.body, c.want)
		}
	}
}
