package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// rssAnonBytes is the anonymous resident memory of pid (RssAnon: the heap
// and stacks, not the pages of the data file the store maps).
func rssAnonBytes(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Skipf("no /proc on this system: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "RssAnon:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("RssAnon line %q: %v", line, err)
			}
			return kb << 10
		}
	}
	t.Skipf("no RssAnon in /proc/%d/status", pid)
	return 0
}

// settledAnon polls the anonymous memory of pid until it is under limit or
// d has passed, and returns the last reading.
func settledAnon(t *testing.T, pid int, limit int64, d time.Duration) int64 {
	t.Helper()
	deadline := time.Now().Add(d)
	now := rssAnonBytes(t, pid)
	for now >= limit && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond) // polling the process from outside
		now = rssAnonBytes(t, pid)
	}
	return now
}

// countTasksIn counts the tasks in status through GET /tasks.
func countTasksIn(t *testing.T, a *agentProc, status string) int {
	t.Helper()
	n, token := 0, ""
	for {
		r := a.call(http.MethodGet, prefix+"/tasks?page_size=500&status="+status+"&page_token="+token, nil)
		var l struct {
			Tasks         []json.RawMessage `json:"tasks"`
			NextPageToken string            `json:"next_page_token"`
		}
		if r.status != http.StatusOK || json.Unmarshal(r.body, &l) != nil {
			t.Fatalf("GET /tasks?status=%s: %.200s", status, r)
		}
		n += len(l.Tasks)
		if l.NextPageToken == "" {
			return n
		}
		token = l.NextPageToken
	}
}

// TestHostileParkedTasks (issue #15, item 6): 200 tasks with a 500 KiB
// payload each wait in info_needed (the sleep handler needs "ms"). Their
// payloads stay on disk: the agent's anonymous memory grows by less than
// 32 MiB (100 MiB of payloads). With max_parked_tasks 200 the next one is
// refused 429 too_many_parked_tasks. After a restart the 200 still wait,
// memory stays bounded, and those whose information is provided (40 of
// them, to keep the test short) run to completed with their whole payload
// and the others still wait.
func TestHostileParkedTasks(t *testing.T) {
	const (
		tasks   = 200
		padSize = 500 << 10
		maxGrow = 32 << 20
		// resumed is how many get their information after the restart
		// (each then writes its 500 KiB three times: kept short).
		resumed = 40
	)
	if os.Getenv("SYNAPSE_E2E_RACE") == "1" {
		t.Skip("resident memory of a -race binary is not the product's")
	}
	a := startAgent(t, agentOpts{env: []string{
		"SYNAPSE_MAX_PARKED_TASKS=" + strconv.Itoa(tasks),
		"SYNAPSE_MAX_CONCURRENT_TASKS=" + strconv.Itoa(tasks), // the provides below run them all
	}})
	before := rssAnonBytes(t, a.pid())
	hc := newClient(1, requestTimeout)
	defer hc.CloseIdleConnections()
	body := []byte(`{"task_type":"sleep","payload":{"pad":"` + strings.Repeat("p", padSize) + `"}}`)
	ids := make([]string, 0, tasks)
	for i := range tasks {
		r, err := a.send(context.Background(), hc, http.MethodPost, prefix+"/task", body)
		if err != nil {
			t.Fatalf("POST /task %d: %v", i, err)
		}
		var v taskView
		if r.status != http.StatusCreated || json.Unmarshal(r.body, &v) != nil || v.Status != "info_needed" {
			t.Fatalf("POST /task %d: got %.200s, want 201 info_needed", i, r)
		}
		ids = append(ids, v.TaskID)
	}
	after := settledAnon(t, a.pid(), before+maxGrow, 10*time.Second)
	t.Logf("RssAnon %d KiB before, %d KiB with %d tasks × %d KiB parked (+%d KiB; VmRSS %d KiB)",
		before>>10, after>>10, tasks, padSize>>10, (after-before)>>10, rssBytes(t, a.pid())>>10)
	if after-before >= maxGrow {
		t.Errorf("%d parked tasks hold %d KiB of memory, want under %d KiB", tasks, (after-before)>>10, maxGrow>>10)
	}

	r, err := a.send(context.Background(), hc, http.MethodPost, prefix+"/task", body)
	if err != nil {
		t.Fatalf("POST /task beyond the bound: %v", err)
	}
	if r.status != http.StatusTooManyRequests || tpCode(string(r.body)) != "too_many_parked_tasks" ||
		!strings.Contains(string(r.body), "max_parked_tasks") {
		t.Errorf("task %d beyond max_parked_tasks: got %.300s, want 429 too_many_parked_tasks naming the setting", tasks+1, r)
	}

	a.stop()
	a.start()
	restarted := settledAnon(t, a.pid(), before+maxGrow, 10*time.Second)
	t.Logf("RssAnon %d KiB after the restart with %d parked tasks", restarted>>10, tasks)
	if restarted-before >= maxGrow {
		t.Errorf("after a restart %d parked tasks hold %d KiB of memory, want under %d KiB", tasks, (restarted-before)>>10, maxGrow>>10)
	}
	if n := countTasksIn(t, a, "info_needed"); n != tasks {
		t.Fatalf("%d tasks in info_needed after the restart, want %d", n, tasks)
	}
	// Eight clients at a time: the store commits their writes together.
	work := make(chan string)
	errs := make(chan error, resumed)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := newClient(1, requestTimeout)
			defer c.CloseIdleConnections()
			for id := range work {
				r, err := a.send(context.Background(), c, http.MethodPost, prefix+"/task/"+id+"/info", []byte(`{"fields":{"ms":0}}`))
				if err == nil && r.status != http.StatusOK {
					err = fmt.Errorf("POST /task/%s/info: %.200s, want 200", id, r)
				}
				errs <- err
			}
		}()
	}
	for _, id := range ids[:resumed] {
		work <- id
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids[:resumed] {
		v := a.waitTask(id, 10*time.Second, "a final state", func(v taskView) bool { return v.terminal() })
		var p struct {
			Pad string `json:"pad"`
			MS  *int   `json:"ms"`
		}
		if v.Status != "completed" || json.Unmarshal(v.Payload, &p) != nil || len(p.Pad) != padSize || p.MS == nil {
			t.Fatalf("task %s: %s (%s) with a %d-byte pad, want completed with the whole payload and ms", id, v.Status, v.ErrorMessage, len(p.Pad))
		}
	}
	if n := countTasksIn(t, a, "info_needed"); n != tasks-resumed {
		t.Errorf("%d tasks still in info_needed, want %d", n, tasks-resumed)
	}
}
