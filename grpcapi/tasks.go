//go:build grpc

package grpcapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/synapse-edge/synapse/agent"
	pb "github.com/synapse-edge/synapse/proto"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// maxIdemKey bounds idempotency keys like the REST Idempotency-Key.
const maxIdemKey = 255

// SubmitTask is POST /task.
func (s *Server) SubmitTask(ctx context.Context, in *pb.SubmitTaskRequest) (*pb.SubmitTaskResponse, error) {
	req := &wire.SubmitRequest{TaskType: in.GetTaskType(), PayloadJSON: in.GetPayloadJson(), CallbackURL: in.GetCallbackUrl(),
		TTLSeconds: int(in.GetTtlSeconds()), IdempotencyKey: in.GetIdempotencyKey(), Priority: in.GetPriority(), Target: in.GetTarget()}
	return s.submit(ctx, req, in)
}

// submit runs the submit flow of both submit RPCs: idempotency (keys are
// scoped by token like the REST ones; a request is "the same" when its
// message is), then agent.Submit.
func (s *Server) submit(ctx context.Context, req *wire.SubmitRequest, in proto.Message) (*pb.SubmitTaskResponse, error) {
	p := principal(ctx)
	var idem *agent.IdemWrite
	if key := req.IdempotencyKey; key != "" {
		if err := checkIdemKey(key); err != nil {
			return nil, err
		}
		hash, err := requestHash(in)
		if err != nil {
			return nil, err
		}
		if resp, done, err := s.replay(p.ID, key, hash); done || err != nil {
			return resp, err
		}
		idem = &agent.IdemWrite{Scope: p.ID, Key: key, RequestHash: hash,
			Render: func(t *wire.Task) (int, string, []byte) {
				b, _ := json.Marshal(submitResponse(t))
				return 201, wire.ContentJSON, b
			}}
	}
	t, err := s.a.Submit(ctx, p, req, idem)
	if agent.ErrIdemRace(err) {
		resp, _, err := s.replay(p.ID, idem.Key, idem.RequestHash)
		return resp, err
	}
	if err != nil {
		return nil, err
	}
	r := submitResponse(t)
	return &pb.SubmitTaskResponse{TaskId: r.TaskID, Status: string(r.Status), Message: r.Message}, nil
}

func checkIdemKey(k string) error {
	if len(k) > maxIdemKey {
		return wire.Errorf(wire.CodeInvalidParams, "idempotency_key is longer than %d bytes", maxIdemKey).With("field", "idempotency_key")
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return wire.Errorf(wire.CodeInvalidParams, "idempotency_key must be printable ASCII").With("field", "idempotency_key")
		}
	}
	return nil
}

// requestHash fingerprints a request message: its type and its
// deterministic encoding.
func requestHash(m proto.Message) (string, error) {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return "", wire.Errorf(wire.CodeInvalidParams, "encode request: %v", err)
	}
	h := sha256.New()
	h.Write([]byte("grpc:" + string(m.ProtoReflect().Descriptor().FullName()) + "\x00"))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil)), nil
}

// replay answers from a stored idempotency record; done reports that it
// did (or that the key was used for another request).
func (s *Server) replay(scope, key, hash string) (*pb.SubmitTaskResponse, bool, error) {
	var r wire.SubmitResponse
	done, err := s.replayRecord(scope, key, hash, func(b []byte) error { return json.Unmarshal(b, &r) })
	if !done || err != nil {
		return nil, done, err
	}
	return &pb.SubmitTaskResponse{TaskId: r.TaskID, Status: string(r.Status), Message: r.Message}, true, nil
}

// replayRecord reads the idempotency record of key and hands its body to
// decode; done reports that there was one (or that the key was used for
// another request: idempotency_key_reused).
func (s *Server) replayRecord(scope, key, hash string, decode func([]byte) error) (bool, error) {
	var rec *store.IdemRecord
	err := s.a.Store().View(func(tx *store.Tx) error {
		var err error
		rec, err = tx.Idem(scope, key)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return true, wire.Errorf(wire.CodeSysStorage, "read idempotency record: %v", err)
	}
	if time.Since(rec.CreatedAt) > agent.IdempotencyTTL {
		return false, nil
	}
	if rec.RequestHash != hash {
		return true, wire.Errorf(wire.CodeIdempotencyMismatch, "").With("idempotency_key", key)
	}
	if err := decode(rec.Body); err != nil {
		return true, wire.Errorf(wire.CodeSysStorage, "idempotency record: %v", err)
	}
	return true, nil
}

// submitResponse is the answer of POST /task.
func submitResponse(t *wire.Task) *wire.SubmitResponse {
	msg := "task accepted"
	if t.Status == wire.StatusInfoNeeded {
		msg = "task needs more information: see missing_fields on GetTask " + t.ID
	}
	return &wire.SubmitResponse{TaskID: t.ID, Status: t.Status, Message: msg}
}

// GetTask is GET /task/{id}: the full answer, with the result.
func (s *Server) GetTask(_ context.Context, in *pb.GetTaskRequest) (*pb.TaskStatusResponse, error) {
	t, err := s.task(in.GetTaskId())
	if err != nil {
		return nil, err
	}
	return statusResponse(t.StatusResponse(true)), nil
}

// GetTaskStatus is GET /task/{id}/status.
func (s *Server) GetTaskStatus(_ context.Context, in *pb.GetTaskRequest) (*pb.TaskStatusResponse, error) {
	t, err := s.task(in.GetTaskId())
	if err != nil {
		return nil, err
	}
	return statusResponse(t.StatusResponse(false)), nil
}

func (s *Server) task(id string) (*wire.Task, error) {
	if id == "" {
		return nil, wire.Errorf(wire.CodeInvalidParams, "task_id is required").With("field", "task_id")
	}
	return s.a.Task(id)
}

func statusResponse(r *wire.TaskStatusResponse) *pb.TaskStatusResponse {
	out := &pb.TaskStatusResponse{TaskId: r.TaskID, Status: string(r.Status), Progress: int32(r.Progress),
		ErrorMessage: r.ErrorMessage, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Etag: r.ETag,
		TaskType: r.TaskType, ErrorCode: r.ErrorCode}
	if r.ResultJSON != nil {
		out.ResultJson = *r.ResultJSON
	}
	if b, err := json.Marshal(r); err == nil {
		out.DetailsJson = string(b)
	}
	return out
}

// ListTasks is GET /tasks: page_size 1 to 500 (default 50), newest first.
func (s *Server) ListTasks(_ context.Context, in *pb.ListTasksRequest) (*pb.ListTasksResponse, error) {
	size := int(in.GetPageSize())
	if size == 0 {
		size = 50
	}
	if size < 1 || size > 500 {
		return nil, wire.Errorf(wire.CodeInvalidParams, "page_size must be from 1 to 500").With("field", "page_size")
	}
	st := wire.Status(in.GetStatus())
	if st != "" && !st.Valid() {
		return nil, wire.Errorf(wire.CodeInvalidParams, "status %q is not a task state", st).With("field", "status")
	}
	tasks, next, err := s.a.ListTasks(store.TaskFilter{Status: st, TaskType: in.GetTaskType(), After: in.GetPageToken(), Limit: size})
	if err != nil {
		return nil, wire.Errorf(wire.CodeSysStorage, "list tasks: %v", err)
	}
	out := &pb.ListTasksResponse{Tasks: make([]*pb.TaskStatusResponse, 0, len(tasks)), NextPageToken: next}
	for _, t := range tasks {
		out.Tasks = append(out.Tasks, statusResponse(t.StatusResponse(false)))
	}
	return out, nil
}

// CancelTask is POST /task/{id}/cancel.
func (s *Server) CancelTask(ctx context.Context, in *pb.CancelTaskRequest) (*pb.CancelTaskResponse, error) {
	if in.GetTaskId() == "" {
		return nil, wire.Errorf(wire.CodeInvalidParams, "task_id is required").With("field", "task_id")
	}
	t, err := s.a.Cancel(ctx, in.GetTaskId())
	if err != nil {
		return nil, err
	}
	return &pb.CancelTaskResponse{TaskId: t.ID, Status: string(t.Status), Message: "task " + string(t.Status)}, nil
}
