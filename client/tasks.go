package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// SubmitTask creates a task (POST /task). Without opts.Wait, or when the
// task is still running after it, the agent answers 201 and SubmitTask
// returns the SubmitResponse and a nil *TaskStatus. When the task ended
// within opts.Wait the agent answers 200 with the full task, returned as
// the *TaskStatus (the SubmitResponse then repeats its id and status).
func (c *Client) SubmitTask(ctx context.Context, req SubmitRequest, opts SubmitOptions) (*SubmitResponse, *TaskStatus, error) {
	if opts.Wait > MaxWait {
		return nil, nil, fmt.Errorf("submit task: wait %s is longer than %s", opts.Wait, MaxWait)
	}
	var q url.Values
	if opts.Wait > 0 {
		secs := int((opts.Wait + time.Second - 1) / time.Second)
		q = url.Values{"wait": {strconv.Itoa(secs)}}
	}
	hreq, err := c.newRequest(ctx, http.MethodPost, "/task", q, req)
	if err != nil {
		return nil, nil, err
	}
	if opts.IdempotencyKey != "" {
		hreq.Header.Set("Idempotency-Key", opts.IdempotencyKey)
	}
	resp, err := c.send(hreq)
	if err != nil {
		return nil, nil, fmt.Errorf("submit task: %w", err)
	}
	defer resp.Body.Close()
	var raw json.RawMessage
	if err := readJSON(resp.Body, &raw); err != nil {
		return nil, nil, fmt.Errorf("submit task: %w", err)
	}
	replayed := resp.Header.Get("Idempotent-Replayed") == "true"
	if resp.StatusCode == http.StatusOK {
		var ts TaskStatus
		if err := json.Unmarshal(raw, &ts); err != nil {
			return nil, nil, fmt.Errorf("submit task: decode answer: %w", err)
		}
		return &SubmitResponse{TaskID: ts.TaskID, Status: ts.Status, Replayed: replayed}, &ts, nil
	}
	var sr SubmitResponse
	if err := json.Unmarshal(raw, &sr); err != nil {
		return nil, nil, fmt.Errorf("submit task: decode answer: %w", err)
	}
	sr.Replayed = replayed
	return &sr, nil, nil
}

// GetTask returns the full task: status, progress, result, error and
// history (GET /task/{id}).
func (c *Client) GetTask(ctx context.Context, id string) (*TaskStatus, error) {
	return c.taskCall(ctx, http.MethodGet, id, "", nil, "get task")
}

// GetTaskStatus returns the task without payload, result and history
// (GET /task/{id}/status).
func (c *Client) GetTaskStatus(ctx context.Context, id string) (*TaskStatus, error) {
	return c.taskCall(ctx, http.MethodGet, id, "/status", nil, "get task status")
}

// CancelTask cancels a task (POST /task/{id}/cancel). Cancelling a
// cancelled task succeeds again; a task that ended otherwise gives an
// *APIError with code task_already_completed (409).
func (c *Client) CancelTask(ctx context.Context, id string) (*TaskStatus, error) {
	return c.taskCall(ctx, http.MethodPost, id, "/cancel", nil, "cancel task")
}

// ProvideInfo supplies fields a task in state info_needed asked for
// (POST /task/{id}/info with body {"fields": {...}}).
func (c *Client) ProvideInfo(ctx context.Context, id string, fields map[string]any) (*TaskStatus, error) {
	if fields == nil {
		fields = map[string]any{}
	}
	return c.taskCall(ctx, http.MethodPost, id, "/info", map[string]any{"fields": fields}, "provide task info")
}

// taskCall performs a request on /task/{id}{suffix} that answers a task.
func (c *Client) taskCall(ctx context.Context, method, id, suffix string, body any, what string) (*TaskStatus, error) {
	eid, err := escapeID(id)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	var ts TaskStatus
	if _, _, err := c.do(ctx, method, "/task/"+eid+suffix, nil, body, &ts); err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, id, err)
	}
	return &ts, nil
}

// ListTasks returns one page of tasks (GET /tasks); pass the returned
// NextPageToken as opts.PageToken for the next page, until it is empty.
func (c *Client) ListTasks(ctx context.Context, opts ListOptions) (*TaskList, error) {
	q := url.Values{}
	if opts.Status != "" {
		q.Set("status", opts.Status)
	}
	if opts.TaskType != "" {
		q.Set("task_type", opts.TaskType)
	}
	if opts.PageSize > 0 {
		q.Set("page_size", strconv.Itoa(opts.PageSize))
	}
	if opts.PageToken != "" {
		q.Set("page_token", opts.PageToken)
	}
	var tl TaskList
	if _, _, err := c.do(ctx, http.MethodGet, "/tasks", q, nil, &tl); err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	return &tl, nil
}
