//go:build grpc

package grpcapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/synapse-edge/synapse/auth"
	pb "github.com/synapse-edge/synapse/proto"
	"github.com/synapse-edge/synapse/wire"
)

func TestTaskRPCs(t *testing.T) {
	n := startNode(t, "tasks")
	c := n.tasks()
	ctx := as(t, adminToken)

	t.Run("submit get status list", func(t *testing.T) {
		sub, err := c.SubmitTask(ctx, &pb.SubmitTaskRequest{TaskType: "echo", PayloadJson: `{"msg":"hi"}`})
		if err != nil {
			t.Fatalf("SubmitTask: %v", err)
		}
		if sub.GetTaskId() == "" || sub.GetMessage() != "task accepted" {
			t.Fatalf("SubmitTask = %+v", sub)
		}
		got := n.waitTask(t, sub.GetTaskId())
		if got.GetStatus() != string(wire.StatusCompleted) || !strings.Contains(got.GetResultJson(), `"hi"`) {
			t.Fatalf("GetTask = status %q result %q, want completed with the echo", got.GetStatus(), got.GetResultJson())
		}
		if got.GetTaskType() != "echo" || got.GetEtag() == "" || got.GetCreatedAt() == "" {
			t.Errorf("GetTask = %+v, want task_type, etag and created_at", got)
		}
		st, err := c.GetTaskStatus(ctx, &pb.GetTaskRequest{TaskId: sub.GetTaskId()})
		if err != nil {
			t.Fatalf("GetTaskStatus: %v", err)
		}
		if st.GetStatus() != got.GetStatus() || st.GetEtag() != got.GetEtag() || st.GetResultJson() != "" {
			t.Errorf("GetTaskStatus = %+v, want the same state and etag without the result", st)
		}
		list, err := c.ListTasks(ctx, &pb.ListTasksRequest{TaskType: "echo", PageSize: 10})
		if err != nil {
			t.Fatalf("ListTasks: %v", err)
		}
		found := false
		for _, tk := range list.GetTasks() {
			found = found || tk.GetTaskId() == sub.GetTaskId()
		}
		if !found {
			t.Errorf("ListTasks lacks %s: %v", sub.GetTaskId(), list.GetTasks())
		}
	})

	t.Run("files", func(t *testing.T) {
		sub, err := c.SubmitTaskWithFiles(ctx, &pb.SubmitTaskWithFilesRequest{TaskType: "echo", PayloadJson: `{"msg":"f"}`,
			Files: []*pb.FileUpload{{Field: "doc", Filename: "a.txt", ContentType: "text/plain", Data: []byte("hello")}}})
		if err != nil {
			t.Fatalf("SubmitTaskWithFiles: %v", err)
		}
		got := n.waitTask(t, sub.GetTaskId())
		var details struct {
			Payload struct {
				Msg   string `json:"msg"`
				Files []struct {
					Filename string `json:"filename"`
					Size     int    `json:"size"`
					SHA256   string `json:"sha256"`
					Data     []byte `json:"data"`
				} `json:"files"`
			} `json:"payload"`
		}
		if err := json.Unmarshal([]byte(got.GetDetailsJson()), &details); err != nil {
			t.Fatalf("details_json: %v", err)
		}
		p := details.Payload
		if p.Msg != "f" || len(p.Files) != 1 || p.Files[0].Filename != "a.txt" || string(p.Files[0].Data) != "hello" ||
			p.Files[0].Size != 5 || p.Files[0].SHA256 != "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824" {
			t.Errorf("payload = %+v, want msg f and the file a.txt", p)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		sub, err := c.SubmitTask(ctx, &pb.SubmitTaskRequest{TaskType: "sleep", PayloadJson: `{"ms":60000}`})
		if err != nil {
			t.Fatalf("SubmitTask: %v", err)
		}
		got, err := c.CancelTask(ctx, &pb.CancelTaskRequest{TaskId: sub.GetTaskId()})
		if err != nil {
			t.Fatalf("CancelTask: %v", err)
		}
		if got.GetStatus() != string(wire.StatusCancelled) {
			t.Errorf("CancelTask status = %q, want %q", got.GetStatus(), wire.StatusCancelled)
		}
		if _, err := c.CancelTask(ctx, &pb.CancelTaskRequest{TaskId: sub.GetTaskId()}); err != nil {
			t.Errorf("cancelling again: %v, want no error", err)
		}
	})

	t.Run("idempotency", func(t *testing.T) {
		req := &pb.SubmitTaskRequest{TaskType: "echo", PayloadJson: `{"n":1}`, IdempotencyKey: "k-1"}
		first, err := c.SubmitTask(ctx, req)
		if err != nil {
			t.Fatalf("first: %v", err)
		}
		again, err := c.SubmitTask(ctx, req)
		if err != nil {
			t.Fatalf("again: %v", err)
		}
		if got, want := again.GetTaskId(), first.GetTaskId(); got != want {
			t.Errorf("replayed task_id = %s, want %s", got, want)
		}
		_, err = c.SubmitTask(ctx, &pb.SubmitTaskRequest{TaskType: "echo", PayloadJson: `{"n":2}`, IdempotencyKey: "k-1"})
		code, reason := codeOf(err)
		if reason != wire.CodeIdempotencyMismatch || code == codes.OK {
			t.Errorf("other request, same key: %v (%s), want %s", code, reason, wire.CodeIdempotencyMismatch)
		}
	})
}

func TestStreamTaskStatus(t *testing.T) {
	n := startNode(t, "stream")
	ctx := as(t, adminToken)
	c := n.tasks()

	t.Run("two tasks on one stream", func(t *testing.T) {
		a, err := c.SubmitTask(ctx, &pb.SubmitTaskRequest{TaskType: "sleep", PayloadJson: `{"ms":150}`})
		if err != nil {
			t.Fatal(err)
		}
		b, err := c.SubmitTask(ctx, &pb.SubmitTaskRequest{TaskType: "echo", PayloadJson: `{"x":1}`})
		if err != nil {
			t.Fatal(err)
		}
		st, err := c.StreamTaskStatus(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{a.GetTaskId(), b.GetTaskId()} {
			if err := st.Send(&pb.TaskStatusStreamRequest{TaskId: id}); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.CloseSend(); err != nil {
			t.Fatal(err)
		}
		last := map[string]uint64{}
		complete := map[string]bool{}
		for range 1000 {
			u, err := st.Recv()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("Recv: %v", err)
			}
			if u.GetSeq() <= last[u.GetTaskId()] {
				t.Errorf("task %s: seq %d after %d", u.GetTaskId(), u.GetSeq(), last[u.GetTaskId()])
			}
			last[u.GetTaskId()] = u.GetSeq()
			if complete[u.GetTaskId()] {
				t.Errorf("task %s: event %s after complete", u.GetTaskId(), u.GetEventType())
			}
			complete[u.GetTaskId()] = u.GetEventType() == string(wire.EventComplete)
		}
		if !complete[a.GetTaskId()] || !complete[b.GetTaskId()] {
			t.Errorf("complete = %v, want both tasks completed before the stream ended", complete)
		}
		// The same as GET /task/{id}/stream's events.
		evs, err := n.a.Events(a.GetTaskId(), 0)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := last[a.GetTaskId()], evs[len(evs)-1].Seq; got != want {
			t.Errorf("last seq = %d, want %d (the store's last event)", got, want)
		}
	})

	t.Run("resume after last_seq", func(t *testing.T) {
		sub, err := c.SubmitTask(ctx, &pb.SubmitTaskRequest{TaskType: "echo", PayloadJson: `{}`})
		if err != nil {
			t.Fatal(err)
		}
		n.waitTask(t, sub.GetTaskId())
		st, err := c.StreamTaskStatus(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Send(&pb.TaskStatusStreamRequest{TaskId: sub.GetTaskId(), LastSeq: 1}); err != nil {
			t.Fatal(err)
		}
		u, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if u.GetSeq() != 2 {
			t.Errorf("first seq after last_seq 1 = %d, want 2", u.GetSeq())
		}
	})

	t.Run("unknown task", func(t *testing.T) {
		st, err := c.StreamTaskStatus(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Send(&pb.TaskStatusStreamRequest{TaskId: "nope"}); err != nil {
			t.Fatal(err)
		}
		_, err = st.Recv()
		want := n.rest(t, "GET", "/task/nope/stream", adminToken, nil).errorCode(t)
		if code, reason := codeOf(err); code != codes.NotFound || reason != want {
			t.Errorf("Recv = %v (%s), want NotFound (%s)", code, reason, want)
		}
	})

	t.Run("needs tasks:read", func(t *testing.T) {
		st, err := c.StreamTaskStatus(as(t, n.token(t, auth.ScopeTier1Read)))
		if err == nil {
			_, err = st.Recv()
		}
		if code, _ := codeOf(err); code != codes.PermissionDenied {
			t.Errorf("stream with a tier1:read token: %v, want PermissionDenied", err)
		}
	})
}

// TestTasksShared: a task submitted over gRPC is the one REST shows, and
// the other way round.
func TestTasksShared(t *testing.T) {
	n := startNode(t, "shared")
	ctx := as(t, adminToken)

	sub, err := n.tasks().SubmitTask(ctx, &pb.SubmitTaskRequest{TaskType: "echo", PayloadJson: `{"via":"grpc"}`})
	if err != nil {
		t.Fatal(err)
	}
	done := n.waitTask(t, sub.GetTaskId())
	r := n.rest(t, "GET", "/task/"+sub.GetTaskId(), adminToken, nil)
	if r.status != http.StatusOK {
		t.Fatalf("REST GET of the gRPC task: %d %s", r.status, r.body)
	}
	obj := r.object(t)
	if obj["task_id"] != sub.GetTaskId() || obj["status"] != done.GetStatus() || obj["etag"] != done.GetEtag() {
		t.Errorf("REST = %v, want the task gRPC shows (%s %s)", obj, done.GetStatus(), done.GetEtag())
	}

	r = n.rest(t, "POST", "/task", adminToken, []byte(`{"task_type":"echo","payload":{"via":"rest"}}`))
	if r.status != http.StatusCreated {
		t.Fatalf("REST POST /task: %d %s", r.status, r.body)
	}
	id, _ := r.object(t)["task_id"].(string)
	got := n.waitTask(t, id)
	if got.GetTaskId() != id || !strings.Contains(got.GetResultJson(), `"rest"`) {
		t.Errorf("gRPC GetTask of the REST task = %+v", got)
	}
	list, err := n.tasks().ListTasks(ctx, &pb.ListTasksRequest{})
	if err != nil {
		t.Fatal(err)
	}
	rl := n.rest(t, "GET", "/tasks", adminToken, nil)
	var restList struct {
		Tasks []struct {
			TaskID string `json:"task_id"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal(rl.body, &restList); err != nil {
		t.Fatal(err)
	}
	if len(restList.Tasks) != len(list.GetTasks()) {
		t.Fatalf("REST lists %d tasks, gRPC %d", len(restList.Tasks), len(list.GetTasks()))
	}
	for i := range restList.Tasks {
		if got, want := list.GetTasks()[i].GetTaskId(), restList.Tasks[i].TaskID; got != want {
			t.Errorf("task %d: gRPC %s, REST %s", i, got, want)
		}
	}
}
