//go:build grpc

package grpcapi_test

import (
	"bytes"
	"io"
	"net/http"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	pb "github.com/synapse-edge/synapse/proto"
	"github.com/synapse-edge/synapse/wire"
)

// TestIdempotencyInFlight: a gRPC call whose idempotency key is still
// being answered — here by a REST POST /task?wait=30 of the same token
// with the same key — is Aborted with idempotency_key_in_flight, as REST
// answers 409 (one rule, in the agent, for both APIs); once the first is
// answered, the key belongs to the REST request, so the gRPC message is
// another request: idempotency_key_reused.
func TestIdempotencyInFlight(t *testing.T) {
	n := startNode(t, "inflight")
	ctx := as(t, adminToken)
	const key = "slow-key"

	type result struct {
		status int
		body   []byte
		err    error
	}
	first := make(chan result, 1)
	go func() {
		req, err := http.NewRequest("POST", n.base+wire.APIPrefix+"/task?wait=30", bytes.NewReader([]byte(`{"task_type":"sleep","payload":{"ms":60000}}`)))
		if err != nil {
			first <- result{err: err}
			return
		}
		req.Header.Set("Authorization", "Bearer "+adminToken)
		req.Header.Set("Idempotency-Key", key)
		resp, err := (&http.Client{Timeout: pollTimeout}).Do(req)
		if err != nil {
			first <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		first <- result{resp.StatusCode, b, err}
	}()

	var id string
	deadline := time.Now().Add(pollTimeout)
	for id == "" {
		l, err := n.tasks().ListTasks(ctx, &pb.ListTasksRequest{TaskType: "sleep"})
		if err != nil {
			t.Fatal(err)
		}
		if len(l.GetTasks()) > 0 {
			id = l.GetTasks()[0].GetTaskId()
		} else if time.Now().After(deadline) {
			t.Fatal("the REST request's task was not stored")
		} else {
			time.Sleep(5 * time.Millisecond)
		}
	}

	t.Run("SubmitTask", func(t *testing.T) {
		_, err := n.tasks().SubmitTask(ctx, &pb.SubmitTaskRequest{TaskType: "sleep", PayloadJson: `{"ms":60000}`, IdempotencyKey: key})
		if code, reason := codeOf(err); code != codes.Aborted || reason != wire.CodeIdempotencyInFlight {
			t.Errorf("SubmitTask while in flight = %v (%s), want Aborted %s", code, reason, wire.CodeIdempotencyInFlight)
		}
	})
	t.Run("CreateGroup", func(t *testing.T) {
		_, err := n.groups().CreateGroup(ctx, &pb.CreateGroupRequest{Name: "g", IdempotencyKey: key})
		if code, reason := codeOf(err); code != codes.Aborted || reason != wire.CodeIdempotencyInFlight {
			t.Errorf("CreateGroup while in flight = %v (%s), want Aborted %s", code, reason, wire.CodeIdempotencyInFlight)
		}
	})
	t.Run("REST too", func(t *testing.T) {
		r := n.rest(t, "POST", "/task", adminToken, []byte(`{"task_type":"echo","idempotency_key":"`+key+`"}`))
		if r.status != http.StatusConflict || r.errorCode(t) != wire.CodeIdempotencyInFlight {
			t.Errorf("REST while in flight = %d %s, want 409 %s", r.status, r.body, wire.CodeIdempotencyInFlight)
		}
	})

	if _, err := n.tasks().CancelTask(ctx, &pb.CancelTaskRequest{TaskId: id}); err != nil {
		t.Fatal(err)
	}
	res := <-first
	if res.err != nil || res.status != http.StatusOK {
		t.Fatalf("first REST request = %d %s, %v; want 200", res.status, res.body, res.err)
	}
	_, err := n.tasks().SubmitTask(ctx, &pb.SubmitTaskRequest{TaskType: "sleep", PayloadJson: `{"ms":60000}`, IdempotencyKey: key})
	if code, reason := codeOf(err); code != codes.InvalidArgument || reason != wire.CodeIdempotencyMismatch {
		t.Errorf("SubmitTask after the REST answer = %v (%s), want InvalidArgument %s", code, reason, wire.CodeIdempotencyMismatch)
	}
	l, err := n.tasks().ListTasks(ctx, &pb.ListTasksRequest{})
	if err != nil || len(l.GetTasks()) != 1 {
		t.Errorf("tasks = %d (%v), want only the REST request's", len(l.GetTasks()), err)
	}
}
