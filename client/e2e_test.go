package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/client"
	"github.com/synapse-edge/synapse/client/agenttest"
)

// The end-to-end tests run the client against a real agent process built
// from this module; they skip while the binary does not build.

var synapseBin agenttest.Binary

func TestMain(m *testing.M) {
	code := m.Run()
	synapseBin.Cleanup()
	os.Exit(code)
}

func startAgent(t *testing.T) (*agenttest.Agent, *client.Client) {
	t.Helper()
	a := agenttest.Start(t, synapseBin.Path(t), agenttest.Options{})
	return a, client.New(a.URL, a.Token)
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func submit(t *testing.T, c *client.Client, taskType, payload string, wait time.Duration) (*client.SubmitResponse, *client.TaskStatus) {
	t.Helper()
	sub, ts, err := c.SubmitTask(testCtx(t), client.SubmitRequest{TaskType: taskType, Payload: json.RawMessage(payload)},
		client.SubmitOptions{Wait: wait})
	if err != nil {
		t.Fatalf("submit %s: %v", taskType, err)
	}
	return sub, ts
}

// wantAPIError checks that err is an *APIError with the given status and code.
func wantAPIError(t *testing.T, err error, status int, code string) {
	t.Helper()
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("err = %v, want an *APIError %s (%d)", err, code, status)
	}
	if apiErr.Status != status || apiErr.Code != code {
		t.Errorf("got %s (%d), want %s (%d): %v", apiErr.Code, apiErr.Status, code, status, err)
	}
}

func TestE2EHealthAndIdentity(t *testing.T) {
	a, _ := startAgent(t)
	anon := client.New(a.URL, "") // both routes need no token
	h, err := anon.Health(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if h.Status != "SERVING" || h.Version == "" {
		t.Errorf("health = %+v, want SERVING with a version", h)
	}
	id, err := anon.Identity(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if id.AgentID == "" || id.PublicKey == "" || id.ProtocolVersion == "" {
		t.Errorf("identity = %+v, want agent_id, public_key and protocol_version", id)
	}
	_, err = anon.ListTasks(testCtx(t), client.ListOptions{})
	wantAPIError(t, err, 401, errCode(err))
}

// errCode returns the code of an *APIError (any code is accepted where
// only the status matters).
func errCode(err error) string {
	var apiErr *client.APIError
	if errors.As(err, &apiErr) {
		return apiErr.Code
	}
	return ""
}

func TestE2ESubmitAndGet(t *testing.T) {
	_, c := startAgent(t)

	t.Run("wait", func(t *testing.T) {
		sub, ts := submit(t, c, "echo", `{"msg":"hi"}`, 10*time.Second)
		if ts == nil || ts.Status != "completed" || sub.TaskID != ts.TaskID {
			t.Fatalf("submit with wait = %+v, %+v; want the completed task", sub, ts)
		}
		var got map[string]string
		if err := json.Unmarshal([]byte(ts.ResultJSON), &got); err != nil || got["msg"] != "hi" {
			t.Errorf("result_json = %q, want the payload", ts.ResultJSON)
		}
		if len(ts.History) < 2 || ts.History[len(ts.History)-1].Status != "completed" {
			t.Errorf("history = %+v, want transitions ending in completed", ts.History)
		}
	})

	t.Run("status route is short", func(t *testing.T) {
		sub, _ := submit(t, c, "echo", `{"x":1}`, 10*time.Second)
		st, err := c.GetTaskStatus(testCtx(t), sub.TaskID)
		if err != nil {
			t.Fatal(err)
		}
		if st.Status != "completed" || st.ResultJSON != "" || len(st.History) != 0 || st.ETag == "" {
			t.Errorf("status = %+v, want completed with etag and without result or history", st)
		}
		full, err := c.GetTask(testCtx(t), sub.TaskID)
		if err != nil {
			t.Fatal(err)
		}
		if full.ResultJSON == "" || len(full.History) == 0 {
			t.Errorf("full task = %+v, want result and history", full)
		}
	})

	t.Run("idempotency", func(t *testing.T) {
		req := client.SubmitRequest{TaskType: "echo", Payload: json.RawMessage(`{"k":"v"}`)}
		opts := client.SubmitOptions{IdempotencyKey: "client-e2e-1"}
		first, _, err := c.SubmitTask(testCtx(t), req, opts)
		if err != nil {
			t.Fatal(err)
		}
		second, _, err := c.SubmitTask(testCtx(t), req, opts)
		if err != nil {
			t.Fatal(err)
		}
		if first.Replayed || !second.Replayed || first.TaskID != second.TaskID {
			t.Errorf("first %+v, second %+v; want the second replayed with the same id", first, second)
		}
		req.Payload = json.RawMessage(`{"k":"other"}`)
		_, _, err = c.SubmitTask(testCtx(t), req, opts)
		wantAPIError(t, err, 422, errCode(err))
	})

	t.Run("errors", func(t *testing.T) {
		_, err := c.GetTask(testCtx(t), "no-such-task")
		wantAPIError(t, err, 404, "task_not_found")
		if !errors.Is(err, &client.APIError{Code: "task_not_found"}) {
			t.Error("errors.Is(task_not_found) = false")
		}
		_, _, err = c.SubmitTask(testCtx(t), client.SubmitRequest{}, client.SubmitOptions{})
		wantAPIError(t, err, 400, "invalid_params")
		if _, err := c.GetTask(testCtx(t), ""); !errors.Is(err, client.ErrEmptyID) {
			t.Errorf("empty id: err = %v, want ErrEmptyID", err)
		}
		if _, _, err := c.SubmitTask(testCtx(t), client.SubmitRequest{TaskType: "echo"}, client.SubmitOptions{Wait: 2 * time.Minute}); err == nil {
			t.Error("wait over MaxWait accepted")
		}
	})
}

func TestE2EListCancelInfo(t *testing.T) {
	_, c := startAgent(t)
	var ids []string
	for i := range 3 {
		sub, _ := submit(t, c, "echo", `{"i":`+strconv.Itoa(i)+`}`, 10*time.Second)
		ids = append(ids, sub.TaskID)
	}

	t.Run("pages", func(t *testing.T) {
		seen := map[string]bool{}
		opts := client.ListOptions{TaskType: "echo", PageSize: 1}
		for page := 0; page < 10; page++ {
			tl, err := c.ListTasks(testCtx(t), opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(tl.Tasks) > 1 {
				t.Fatalf("page of size 1 has %d tasks", len(tl.Tasks))
			}
			for _, ts := range tl.Tasks {
				seen[ts.TaskID] = true
			}
			if tl.NextPageToken == "" {
				break
			}
			opts.PageToken = tl.NextPageToken
		}
		for _, id := range ids {
			if !seen[id] {
				t.Errorf("task %s not listed", id)
			}
		}
	})

	t.Run("cancel", func(t *testing.T) {
		sub, _ := submit(t, c, "sleep", `{"ms":60000}`, 0)
		ts, err := c.CancelTask(testCtx(t), sub.TaskID)
		if err != nil {
			t.Fatal(err)
		}
		if ts.Status != "cancelled" {
			t.Errorf("cancel answered %q, want cancelled", ts.Status)
		}
		_, err = c.CancelTask(testCtx(t), ids[0])
		wantAPIError(t, err, 409, "task_already_completed")
	})

	t.Run("info", func(t *testing.T) {
		sub, _ := submit(t, c, "sleep", `{}`, 0)
		if sub.Status != "info_needed" {
			t.Fatalf("sleep without ms: status %q, want info_needed", sub.Status)
		}
		ts, err := c.GetTask(testCtx(t), sub.TaskID)
		if err != nil {
			t.Fatal(err)
		}
		if len(ts.MissingFields) != 1 || ts.MissingFields[0].Field != "ms" {
			t.Errorf("missing_fields = %+v, want ms", ts.MissingFields)
		}
		if _, err := c.ProvideInfo(testCtx(t), sub.TaskID, map[string]any{"ms": 5}); err != nil {
			t.Fatal(err)
		}
		var final client.TaskStatus
		err = c.StreamTask(testCtx(t), sub.TaskID, "", func(ev client.Event) error {
			if ev.Type == "complete" {
				return ev.Decode(&final)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if final.Status != "completed" {
			t.Errorf("after info: %q, want completed", final.Status)
		}
	})
}

func TestE2EStream(t *testing.T) {
	_, c := startAgent(t)
	sub, _ := submit(t, c, "sleep", `{"ms":200}`, 0)

	var events []client.Event
	err := c.StreamTask(testCtx(t), sub.TaskID, "", func(ev client.Event) error {
		events = append(events, ev)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(events) < 3 || events[len(events)-1].Type != "complete" {
		t.Fatalf("events %v, want several ending with complete", eventTypes(events))
	}
	prev := 0
	for _, ev := range events {
		n, err := strconv.Atoi(ev.ID)
		if err != nil || n <= prev {
			t.Fatalf("event ids %v are not increasing integers", eventIDs(events))
		}
		prev = n
	}
	var done client.TaskStatus
	if err := events[len(events)-1].Decode(&done); err != nil || done.Status != "completed" {
		t.Errorf("complete event data %s, want the completed task", events[len(events)-1].Data)
	}

	t.Run("resume after an id", func(t *testing.T) {
		var resumed []client.Event
		err := c.StreamTask(testCtx(t), sub.TaskID, events[0].ID, func(ev client.Event) error {
			resumed = append(resumed, ev)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := eventIDs(resumed), eventIDs(events[1:]); !bytes.Equal([]byte(got), []byte(want)) {
			t.Errorf("resumed ids %s, want %s", got, want)
		}
	})
	t.Run("stop early", func(t *testing.T) {
		n := 0
		err := c.StreamTask(testCtx(t), sub.TaskID, "", func(client.Event) error { n++; return client.ErrStopStream })
		if err != nil || n != 1 {
			t.Errorf("err %v after %d events, want nil after 1", err, n)
		}
	})
	t.Run("unknown task", func(t *testing.T) {
		err := c.StreamTask(testCtx(t), "no-such-task", "", func(client.Event) error { return nil })
		wantAPIError(t, err, 404, "task_not_found")
	})
}

func eventTypes(evs []client.Event) []string {
	var s []string
	for _, e := range evs {
		s = append(s, e.Type)
	}
	return s
}

func eventIDs(evs []client.Event) string {
	var b bytes.Buffer
	for _, e := range evs {
		b.WriteString(e.ID + ",")
	}
	return b.String()
}

func TestE2EAdmin(t *testing.T) {
	a, c := startAgent(t)
	submit(t, c, "echo", `{}`, 10*time.Second)

	tc, err := c.CreateToken(testCtx(t), "reader", []string{client.ScopeTasksRead})
	if err != nil {
		t.Fatal(err)
	}
	if tc.Token == "" || tc.TokenID == "" || tc.Name != "reader" {
		t.Fatalf("created %+v", tc)
	}
	reader := client.New(a.URL, tc.Token)
	if _, err := reader.ListTasks(testCtx(t), client.ListOptions{}); err != nil {
		t.Errorf("reader list: %v", err)
	}
	_, _, err = reader.SubmitTask(testCtx(t), client.SubmitRequest{TaskType: "echo"}, client.SubmitOptions{})
	wantAPIError(t, err, 403, errCode(err))

	list, err := c.ListTokens(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ti := range list {
		found = found || ti.TokenID == tc.TokenID
	}
	if !found {
		t.Errorf("token %s not in %+v", tc.TokenID, list)
	}
	if err := c.RevokeToken(testCtx(t), tc.TokenID); err != nil {
		t.Fatal(err)
	}
	_, err = reader.ListTasks(testCtx(t), client.ListOptions{})
	wantAPIError(t, err, 401, errCode(err))

	check, err := c.CheckDB(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if !check.OK || check.Tasks < 1 || check.SchemaVersion < 1 {
		t.Errorf("check = %+v, want ok with a task", check)
	}
	var buf bytes.Buffer
	n, err := c.Backup(testCtx(t), &buf)
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 || int64(buf.Len()) != n {
		t.Errorf("backup returned %d and wrote %d bytes", n, buf.Len())
	}
}
