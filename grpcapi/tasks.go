//go:build grpc

package grpcapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"google.golang.org/protobuf/proto"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/agent/idemdb"
	pb "github.com/synapse-edge/synapse/proto"
	"github.com/synapse-edge/synapse/wire"
)

// SubmitTask is POST /task.
func (s *Server) SubmitTask(ctx context.Context, in *pb.SubmitTaskRequest) (*pb.SubmitTaskResponse, error) {
	req := &wire.SubmitRequest{TaskType: in.GetTaskType(), PayloadJSON: in.GetPayloadJson(), CallbackURL: in.GetCallbackUrl(),
		TTLSeconds: int(in.GetTtlSeconds()), IdempotencyKey: in.GetIdempotencyKey(), Priority: in.GetPriority(), Target: in.GetTarget()}
	return s.submit(ctx, req, in)
}

// submit runs the submit flow of both submit RPCs: agent.Submit, with
// the idempotency key when there is one (keys are scoped by token like the REST
// ones, the same in-flight, replay and reuse rules; a request is "the
// same" when its message is).
func (s *Server) submit(ctx context.Context, req *wire.SubmitRequest, in proto.Message) (*pb.SubmitTaskResponse, error) {
	var o agent.SubmitOptions
	if req.IdempotencyKey != "" {
		r, err := idemRequest(ctx, req.IdempotencyKey, in)
		if err != nil {
			return nil, err
		}
		o.Idempotency = &r
	}
	sub, err := s.a.Submit(ctx, principal(ctx), req, o)
	if err != nil {
		return nil, err
	}
	if sub.Sent != nil {
		// Stored as it was sent, before the store kept the task.
		var out wire.SubmitResponse
		if err := json.Unmarshal(sub.Sent.Body, &out); err != nil {
			return nil, wire.Errorf(wire.CodeSysStorage, "idempotency record: %v", err)
		}
		return submitPB(&out), nil
	}
	return submitPB(submitResponse(sub.Task)), nil
}

func submitPB(r *wire.SubmitResponse) *pb.SubmitTaskResponse {
	return &pb.SubmitTaskResponse{TaskId: r.TaskID, Status: string(r.Status), Message: r.Message}
}

// idemRequest names a request made with key by the caller. The key is
// checked first, as REST does, so that a bad key is invalid_params
// whatever the message.
func idemRequest(ctx context.Context, key string, m proto.Message) (agent.IdemRequest, error) {
	if err := idemdb.CheckKey(key); err != nil {
		return agent.IdemRequest{}, err
	}
	hash, err := requestHash(m)
	if err != nil {
		return agent.IdemRequest{}, err
	}
	return agent.IdemRequest{Scope: principal(ctx).ID, Key: key, Hash: hash}, nil
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
		TaskType: r.TaskType, ErrorCode: string(r.ErrorCode), NumericCode: int32(r.NumericCode), Recoverable: r.Recoverable,
		Target: r.Target, Deadline: r.Deadline}
	if r.ResultJSON != nil {
		out.ResultJson = *r.ResultJSON
	}
	if b, err := json.Marshal(r); err == nil {
		out.DetailsJson = string(b)
	}
	return out
}

// ListTasks is GET /tasks: page_size 1 to 500 (default 50), newest first
// (agent.TaskPage).
func (s *Server) ListTasks(_ context.Context, in *pb.ListTasksRequest) (*pb.ListTasksResponse, error) {
	list, err := s.a.TaskPage(agent.TaskPageQuery{Status: wire.Status(in.GetStatus()), TaskType: in.GetTaskType(),
		PageToken: in.GetPageToken(), PageSize: int(in.GetPageSize())})
	if err != nil {
		return nil, err
	}
	out := &pb.ListTasksResponse{Tasks: make([]*pb.TaskStatusResponse, 0, len(list.Tasks)), NextPageToken: list.NextPageToken}
	for _, r := range list.Tasks {
		out.Tasks = append(out.Tasks, statusResponse(r))
	}
	return out, nil
}

// CancelTask is POST /task/{id}/cancel; task is that route's answer.
func (s *Server) CancelTask(ctx context.Context, in *pb.CancelTaskRequest) (*pb.CancelTaskResponse, error) {
	if in.GetTaskId() == "" {
		return nil, wire.Errorf(wire.CodeInvalidParams, "task_id is required").With("field", "task_id")
	}
	t, err := s.a.Cancel(ctx, in.GetTaskId())
	if err != nil {
		return nil, err
	}
	return &pb.CancelTaskResponse{TaskId: t.ID, Status: string(t.Status), Message: "task " + string(t.Status),
		Task: statusResponse(t.StatusResponse(false))}, nil
}
