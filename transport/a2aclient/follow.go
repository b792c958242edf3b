package a2aclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/synapse-edge/synapse/a2a"
	"github.com/synapse-edge/synapse/internal/eventstream"
)

// streamMax bounds one subscription: after it the tracker reads the task
// and subscribes again, so a connection that died silently is noticed.
const streamMax = 10 * time.Minute

// followResult is how a subscription ended.
type followResult int

const (
	// followEnded: the tracking ended (onTask said so).
	followEnded followResult = iota
	// followBroken: the stream failed or ended early; read and try again.
	followBroken
	// followUnsupported: the server does not stream this task (no event
	// stream, or a JSON-RPC error such as UnsupportedOperation): poll.
	followUnsupported
)

// streamClient is the HTTP client of subscriptions: like the wire's
// direct client (destinations come from contracts, proxies from the
// environment), without an overall timeout, since a stream lasts as long
// as its task.
func streamClient() *http.Client {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Client{
		Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, DialContext: dialer.DialContext,
			ResponseHeaderTimeout: callTimeout, MaxIdleConnsPerHost: 2, IdleConnTimeout: 90 * time.Second,
			DisableCompression: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// streamEvent is one result of a subscription: v1.0's StreamResponse
// (one of task, statusUpdate, artifactUpdate) or, from a v0.3 server, the
// object itself with its kind.
type streamEvent struct {
	Task           *a2a.Task           `json:"task"`
	StatusUpdate   *a2a.StatusUpdate   `json:"statusUpdate"`
	ArtifactUpdate *a2a.ArtifactUpdate `json:"artifactUpdate"`
	Kind           string              `json:"kind"`
}

// decodeStreamEvent reads one data: line's JSON-RPC response into the
// task state it leaves: cur with the update applied (cur may be nil
// before the first event). A JSON-RPC error gives rpcErr.
func decodeStreamEvent(data []byte, remoteID string, cur *a2a.Task) (next *a2a.Task, rpcErr *rpcError, err error) {
	var ans rpcAnswer
	if err := json.Unmarshal(data, &ans); err != nil {
		return nil, nil, fmt.Errorf("an event is no JSON-RPC response: %w", err)
	}
	if ans.Error != nil {
		return nil, ans.Error, nil
	}
	var ev streamEvent
	if err := json.Unmarshal(ans.Result, &ev); err != nil {
		return nil, nil, fmt.Errorf("decode an event: %w", err)
	}
	switch ev.Kind { // v0.3: the object itself
	case "task":
		ev.Task = new(a2a.Task)
		err = json.Unmarshal(ans.Result, ev.Task)
	case "status-update":
		ev.StatusUpdate = new(a2a.StatusUpdate)
		err = json.Unmarshal(ans.Result, ev.StatusUpdate)
	case "artifact-update":
		ev.ArtifactUpdate = new(a2a.ArtifactUpdate)
		err = json.Unmarshal(ans.Result, ev.ArtifactUpdate)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("decode a %s event: %w", ev.Kind, err)
	}
	next = &a2a.Task{ID: remoteID}
	if cur != nil {
		c := *cur
		next = &c
	}
	switch {
	case ev.Task != nil:
		if ev.Task.ID != remoteID {
			return nil, nil, fmt.Errorf("an event of task %q on the stream of %q", ev.Task.ID, remoteID)
		}
		next = ev.Task
	case ev.StatusUpdate != nil:
		next.Status = ev.StatusUpdate.Status
	case ev.ArtifactUpdate != nil:
		next.Artifacts = withArtifact(next.Artifacts, ev.ArtifactUpdate.Artifact)
	default:
		return nil, nil, errors.New("an event with neither a task nor an update")
	}
	return next, nil, nil
}

// withArtifact returns arts with a replaced by id, or appended.
func withArtifact(arts []a2a.Artifact, a a2a.Artifact) []a2a.Artifact {
	out := make([]a2a.Artifact, 0, len(arts)+1)
	replaced := false
	for _, x := range arts {
		if x.ArtifactID == a.ArtifactID {
			x, replaced = a, true
		}
		out = append(out, x)
	}
	if !replaced {
		out = append(out, a)
	}
	return out
}

// follow subscribes to the remote task (SubscribeToTask, answered as
// server-sent events) and hands every state the stream leaves to onTask,
// which says when the tracking ended. cur is the task as last read (nil:
// not read yet).
func (t *Transport) follow(url, token string, remoteID string, cur *a2a.Task, onTask func(*a2a.Task) (ended bool)) followResult {
	ctx, cancel := context.WithTimeout(t.ctx, streamMax)
	defer cancel()
	params, err := json.Marshal(&a2a.TaskIDParams{ID: remoteID})
	if err != nil {
		return followUnsupported
	}
	body, err := json.Marshal(&a2a.Request{JSONRPC: "2.0", ID: json.RawMessage(strconv.FormatUint(t.c.ids.Add(1), 10)),
		Method: "SubscribeToTask", Params: params})
	if err != nil {
		return followUnsupported
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return followUnsupported
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("A2A-Version", "1.0")
	req.Header.Set("User-Agent", "synapse")
	if token != "" {
		req.Header.Set("Authorization", token)
	}
	resp, err := t.stream.Do(req)
	if err != nil {
		return followBroken
	}
	defer resp.Body.Close()
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode != http.StatusOK || mt != "text/event-stream" {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswer))
		if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
			return followBroken
		}
		return followUnsupported
	}
	rd := eventstream.NewReader(resp.Body)
	for first := true; ; first = false {
		ev, err := rd.Next()
		if err != nil {
			return followBroken // the end of the stream, or a broken one
		}
		next, rpcErr, err := decodeStreamEvent(ev.Data, remoteID, cur)
		switch {
		case rpcErr != nil && first:
			// Refused before any event (the reference server answers
			// errors of streaming methods this way): no stream here.
			return followUnsupported
		case rpcErr != nil, err != nil:
			t.log.Debug("subscription of a remote task", "remote_id", remoteID, "code", codeOf(rpcErr), "err", err)
			return followBroken
		}
		cur = next
		if onTask(cur) {
			return followEnded
		}
	}
}

func codeOf(e *rpcError) int {
	if e == nil {
		return 0
	}
	return e.Code
}
