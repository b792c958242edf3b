//go:build grpc

package grpcapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"github.com/synapse-edge/synapse/agent"
	pb "github.com/synapse-edge/synapse/proto"
	"github.com/synapse-edge/synapse/wire"
)

// Limits of the task RPCs.
const (
	// maxFiles bounds the files of one SubmitTaskWithFiles (as the
	// multipart route).
	maxFiles = 32
	// maxStreamTasks bounds the tasks one StreamTaskStatus follows.
	maxStreamTasks = 64
	// maxResubscribe bounds how often a lagging follower reloads.
	maxResubscribe = 100_000
)

// uploadedFile is how a file appears in the task payload under "files",
// the same as with POST /task/multipart.
type uploadedFile struct {
	Field       string `json:"field"`
	Filename    string `json:"filename"`
	ContentType string `json:"content_type"`
	Size        int64  `json:"size"`
	SHA256      string `json:"sha256"`
	Data        []byte `json:"data"`
}

// SubmitTaskWithFiles is POST /task/multipart: the files are added to the
// payload (a JSON object) under "files".
func (s *Server) SubmitTaskWithFiles(ctx context.Context, in *pb.SubmitTaskWithFilesRequest) (*pb.SubmitTaskResponse, error) {
	payload := map[string]any{}
	if in.GetPayloadJson() != "" {
		if err := json.Unmarshal([]byte(in.GetPayloadJson()), &payload); err != nil {
			return nil, wire.Errorf(wire.CodeInvalidParams, "payload_json must be a JSON object: %v", err).With("field", "payload_json")
		}
	}
	if len(in.GetFiles()) > maxFiles {
		return nil, wire.Errorf(wire.CodeInvalidParams, "at most %d files per task", maxFiles)
	}
	limit := s.a.Config().MaxFileSize
	files := make([]uploadedFile, 0, len(in.GetFiles()))
	for _, f := range in.GetFiles() {
		if int64(len(f.GetData())) > limit {
			return nil, wire.Errorf(wire.CodePayloadTooLarge, "file %q is %d bytes; max_file_size is %d", f.GetFilename(), len(f.GetData()), limit).
				With("filename", f.GetFilename()).With("max_file_size", limit)
		}
		sum := sha256.Sum256(f.GetData())
		files = append(files, uploadedFile{Field: f.GetField(), Filename: f.GetFilename(), ContentType: f.GetContentType(),
			Size: int64(len(f.GetData())), SHA256: hex.EncodeToString(sum[:]), Data: f.GetData()})
	}
	if len(files) > 0 {
		payload["files"] = files
	}
	raw, err := json.Marshal(payload)
	if err != nil {
		return nil, wire.Errorf(wire.CodeInvalidParams, "payload: %v", err)
	}
	req := &wire.SubmitRequest{TaskType: in.GetTaskType(), Payload: raw, CallbackURL: in.GetCallbackUrl(),
		TTLSeconds: int(in.GetTtlSeconds()), IdempotencyKey: in.GetIdempotencyKey(), Priority: in.GetPriority()}
	return s.submit(ctx, req, in)
}

// StreamTaskStatus is GET /task/{id}/stream for any number of tasks on one
// stream: each request adds a task, whose events after last_seq come until
// its complete event. The stream ends when the client has closed its side
// and every task completed, or when the server shuts down. An unknown task
// ends the stream with NotFound.
func (s *Server) StreamTaskStatus(stream pb.TaskService_StreamTaskStatusServer) error {
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	var sendMu sync.Mutex
	send := func(e *wire.Event) error {
		sendMu.Lock()
		defer sendMu.Unlock()
		return stream.Send(&pb.TaskStatusUpdate{TaskId: e.TaskID, EventType: string(e.Type), DataJson: string(e.Data),
			Seq: e.Seq, At: wire.FormatTime(e.At.Time)})
	}
	reqs := make(chan *pb.TaskStatusStreamRequest)
	recvErr := make(chan error, 1)
	go func() {
		for range maxStreamTasks + 1 {
			req, err := stream.Recv()
			if err != nil {
				recvErr <- err
				return
			}
			select {
			case reqs <- req:
			case <-ctx.Done():
				return
			}
		}
	}()
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	errc := make(chan error, 1)
	following := 0
	for range maxStreamTasks + 2 {
		select {
		case req := <-reqs:
			if following == maxStreamTasks {
				return wire.Errorf(wire.CodeRateLimited, "one stream follows at most %d tasks", maxStreamTasks)
			}
			t, err := s.task(req.GetTaskId())
			if err != nil {
				return err
			}
			following++
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := s.pumpTask(ctx, t.ID, req.GetLastSeq(), send); err != nil {
					select {
					case errc <- err:
					default:
					}
				}
			}()
		case err := <-recvErr:
			if !errors.Is(err, io.EOF) {
				return err
			}
			wg.Wait()
			select {
			case err := <-errc:
				return err
			default:
				return nil
			}
		case err := <-errc:
			return err
		case <-s.done:
			return wire.Errorf(wire.CodeAgentNotReady, "the server is shutting down")
		}
	}
	return nil
}

// pumpTask sends a task's events after last until its complete event:
// stored ones first, then live ones, reloading from the store when the
// subscription lags (as the SSE route does).
func (s *Server) pumpTask(ctx context.Context, id string, last uint64, send func(*wire.Event) error) error {
	for range maxResubscribe {
		sub := s.a.Subscribe(id)
		evs, err := s.a.Events(id, last)
		if err != nil {
			sub.Close()
			return err
		}
		for _, e := range evs {
			if err := send(e); err != nil {
				sub.Close()
				return err
			}
			last = e.Seq
			if e.Type == wire.EventComplete {
				sub.Close()
				return nil
			}
		}
		t, err := s.a.Task(id)
		if err != nil || t.Status.Terminal() && t.Seq <= last {
			sub.Close()
			return err
		}
		lagged, err := s.follow(ctx, sub, &last, send)
		sub.Close()
		if !lagged {
			return err
		}
	}
	return wire.Errorf(wire.CodeInternal, "task stream resubscribed too often")
}

func (s *Server) follow(ctx context.Context, sub *agent.Subscription, last *uint64, send func(*wire.Event) error) (lagged bool, err error) {
	for {
		select {
		case e, ok := <-sub.C:
			if !ok {
				return sub.Lagged(), nil
			}
			if e.Seq <= *last {
				continue
			}
			if err := send(e); err != nil {
				return false, err
			}
			*last = e.Seq
			if e.Type == wire.EventComplete {
				return false, nil
			}
		case <-ctx.Done():
			return false, nil
		case <-s.done:
			return false, wire.Errorf(wire.CodeAgentNotReady, "the server is shutting down")
		}
	}
}
