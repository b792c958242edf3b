package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// prefix is the REST API prefix (SPEC §5.2).
const prefix = "/api/v1/synapse"

// requestTimeout bounds one request of the helpers below.
const requestTimeout = 10 * time.Second

// response is an HTTP answer read in full.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) String() string {
	return fmt.Sprintf("%d %s", r.status, bytes.TrimSpace(r.body))
}

// taskView is the TaskStatusResponse of SPEC §5.2 as a client reads it; it
// is declared here rather than taken from package wire so that the tests
// pin the wire format, not the code.
type taskView struct {
	TaskID       string          `json:"task_id"`
	TaskType     string          `json:"task_type"`
	Status       string          `json:"status"`
	Progress     int             `json:"progress"`
	Payload      json.RawMessage `json:"payload"`
	ResultJSON   string          `json:"result_json"`
	ErrorMessage string          `json:"error_message"`
	ErrorCode    string          `json:"error_code"`
	Recoverable  bool            `json:"recoverable"`
	CreatedAt    string          `json:"created_at"`
	// MissingFields is set in info_needed.
	MissingFields []struct {
		Field string `json:"field"`
	} `json:"missing_fields"`
	History []struct {
		From   string `json:"from"`
		Status string `json:"status"`
		Reason string `json:"reason"`
	} `json:"history"`
}

func (v taskView) terminal() bool {
	switch v.Status {
	case "completed", "failed", "cancelled", "rejected":
		return true
	}
	return false
}

// newClient is a keep-alive HTTP client for one agent.
func newClient(conns int, timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			MaxIdleConns:        conns,
			MaxIdleConnsPerHost: conns,
			DisableCompression:  true,
			IdleConnTimeout:     30 * time.Second,
		},
	}
}

// send makes one request with the agent's admin token; header holds
// name, value pairs. A body defaults to Content-Type: application/json.
func (a *agentProc) send(ctx context.Context, hc *http.Client, method, path string, body []byte, header ...string) (response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.url()+path, rd)
	if err != nil {
		return response{}, err
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := hc.Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return response{}, fmt.Errorf("%s %s: read body: %w", method, path, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// call is send with a fresh client that fails the test on a transport error.
func (a *agentProc) call(method, path string, body []byte, header ...string) response {
	a.t.Helper()
	hc := newClient(1, requestTimeout)
	defer hc.CloseIdleConnections()
	r, err := a.send(context.Background(), hc, method, path, body, header...)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	return r
}

// submit posts a task and returns the answer; want is the expected status.
func (a *agentProc) submit(want int, body string, header ...string) (response, string) {
	a.t.Helper()
	r := a.call(http.MethodPost, prefix+"/task", []byte(body), header...)
	if r.status != want {
		a.t.Fatalf("POST /task %s: got %s, want status %d", body, r, want)
	}
	var sr struct {
		TaskID string `json:"task_id"`
	}
	if err := json.Unmarshal(r.body, &sr); err != nil || sr.TaskID == "" {
		a.t.Fatalf("POST /task: answer %s has no task_id (%v)", r, err)
	}
	return r, sr.TaskID
}

// task reads GET /task/{id}, which must answer 200.
func (a *agentProc) task(id string) taskView {
	a.t.Helper()
	r := a.call(http.MethodGet, prefix+"/task/"+url.PathEscape(id), nil)
	if r.status != http.StatusOK {
		a.t.Fatalf("GET /task/%s: got %s, want 200", id, r)
	}
	var v taskView
	if err := json.Unmarshal(r.body, &v); err != nil {
		a.t.Fatalf("GET /task/%s: %v in %s", id, err, r)
	}
	return v
}

// waitTask polls GET /task/{id} until ok holds or timeout passes.
func (a *agentProc) waitTask(id string, timeout time.Duration, what string, ok func(taskView) bool) taskView {
	a.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		v := a.task(id)
		if ok(v) {
			return v
		}
		if time.Now().After(deadline) {
			a.t.Fatalf("task %s is %s (error_code %q) after %s, want %s", id, v.Status, v.ErrorCode, timeout, what)
		}
		time.Sleep(pollEvery) // poll interval
	}
}

// sseEvent is one server-sent event.
type sseEvent struct {
	id, typ, data string
}

// events reads GET /task/{id}/stream from the first event until stop
// returns true, the server closes the stream, or timeout passes.
func (a *agentProc) events(id string, timeout time.Duration, stop func(sseEvent) bool) []sseEvent {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.url()+prefix+"/task/"+url.PathEscape(id)+"/stream", nil)
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		a.t.Fatalf("GET /task/%s/stream: %v", id, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		a.t.Fatalf("GET /task/%s/stream: status %d", id, resp.StatusCode)
	}
	var evs []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.typ == "" && cur.data == "" {
				continue
			}
			evs = append(evs, cur)
			if stop(cur) {
				return evs
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, "id:"):
			cur.id = strings.TrimSpace(strings.TrimPrefix(line, "id:"))
		case strings.HasPrefix(line, "event:"):
			cur.typ = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			cur.data += strings.TrimSpace(strings.TrimPrefix(line, "data:"))
		}
	}
	if ctx.Err() != nil {
		a.t.Fatalf("GET /task/%s/stream: no matching event within %s; got %v", id, timeout, evs)
	}
	return evs
}

// listAll pages through GET /tasks and returns every task id, newest first.
func (a *agentProc) listAll(hc *http.Client) []string {
	a.t.Helper()
	var ids []string
	token := ""
	for range 10_000 {
		q := url.Values{"page_size": {"500"}}
		if token != "" {
			q.Set("page_token", token)
		}
		ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
		r, err := a.send(ctx, hc, http.MethodGet, prefix+"/tasks?"+q.Encode(), nil)
		cancel()
		if err != nil || r.status != http.StatusOK {
			a.t.Fatalf("GET /tasks: %v %s", err, r)
		}
		var page struct {
			Tasks []struct {
				TaskID string `json:"task_id"`
			} `json:"tasks"`
			NextPageToken string `json:"next_page_token"`
		}
		if err := json.Unmarshal(r.body, &page); err != nil {
			a.t.Fatalf("GET /tasks: %v in %s", err, r)
		}
		for _, tk := range page.Tasks {
			ids = append(ids, tk.TaskID)
		}
		if page.NextPageToken == "" {
			return ids
		}
		token = page.NextPageToken
	}
	a.t.Fatalf("GET /tasks: more than 10000 pages")
	return nil
}

// rssBytes reads VmRSS of a process from /proc.
func rssBytes(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Skipf("no /proc on this system: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("VmRSS line %q: %v", line, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}
