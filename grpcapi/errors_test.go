//go:build grpc

package grpcapi_test

import (
	"context"
	"net/http"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/grpcapi"
	pb "github.com/synapse-edge/synapse/proto"
)

// TestErrorsShared runs each failing request over REST and over gRPC:
// both must fail with the same TPError code, REST with the HTTP status
// and gRPC with the code seed 003 §3.4 maps it to.
func TestErrorsShared(t *testing.T) {
	n := startNode(t, "errors")
	reader := n.token(t, auth.ScopeTasksRead)
	tc := n.tasks()
	cases := []struct {
		name     string
		method   string
		path     string
		tok      string
		body     string
		call     func(ctx context.Context) error
		wantHTTP int
		wantCode codes.Code
	}{
		{"no token", "GET", "/tasks", "", "",
			func(ctx context.Context) error { _, err := tc.ListTasks(ctx, &pb.ListTasksRequest{}); return err },
			http.StatusUnauthorized, codes.Unauthenticated},
		{"unknown token", "GET", "/tasks", "nope", "",
			func(ctx context.Context) error { _, err := tc.ListTasks(ctx, &pb.ListTasksRequest{}); return err },
			http.StatusUnauthorized, codes.Unauthenticated},
		{"read-only token submits", "POST", "/task", reader, `{"task_type":"echo"}`,
			func(ctx context.Context) error {
				_, err := tc.SubmitTask(ctx, &pb.SubmitTaskRequest{TaskType: "echo"})
				return err
			},
			http.StatusForbidden, codes.PermissionDenied},
		{"unknown task", "GET", "/task/nope", adminToken, "",
			func(ctx context.Context) error {
				_, err := tc.GetTask(ctx, &pb.GetTaskRequest{TaskId: "nope"})
				return err
			},
			http.StatusNotFound, codes.NotFound},
		{"unknown task status", "GET", "/task/nope/status", adminToken, "",
			func(ctx context.Context) error {
				_, err := tc.GetTaskStatus(ctx, &pb.GetTaskRequest{TaskId: "nope"})
				return err
			},
			http.StatusNotFound, codes.NotFound},
		{"cancel unknown task", "POST", "/task/nope/cancel", adminToken, "",
			func(ctx context.Context) error {
				_, err := tc.CancelTask(ctx, &pb.CancelTaskRequest{TaskId: "nope"})
				return err
			},
			http.StatusNotFound, codes.NotFound},
		{"no task_type", "POST", "/task", adminToken, `{"payload":{}}`,
			func(ctx context.Context) error {
				_, err := tc.SubmitTask(ctx, &pb.SubmitTaskRequest{PayloadJson: `{}`})
				return err
			},
			http.StatusBadRequest, codes.InvalidArgument},
		{"bad payload_json", "POST", "/task", adminToken, `{"task_type":"echo","payload_json":"{"}`,
			func(ctx context.Context) error {
				_, err := tc.SubmitTask(ctx, &pb.SubmitTaskRequest{TaskType: "echo", PayloadJson: "{"})
				return err
			},
			http.StatusBadRequest, codes.InvalidArgument},
		{"bad status filter", "GET", "/tasks?status=sleeping", adminToken, "",
			func(ctx context.Context) error {
				_, err := tc.ListTasks(ctx, &pb.ListTasksRequest{Status: "sleeping"})
				return err
			},
			http.StatusBadRequest, codes.InvalidArgument},
		{"page too large", "GET", "/tasks?page_size=501", adminToken, "",
			func(ctx context.Context) error {
				_, err := tc.ListTasks(ctx, &pb.ListTasksRequest{PageSize: 501})
				return err
			},
			http.StatusBadRequest, codes.InvalidArgument},
		{"unknown peer", "GET", "/agents/nobody", adminToken, "",
			func(ctx context.Context) error {
				_, err := n.caps().QueryAgent(ctx, &pb.QueryAgentRequest{AgentId: "nobody"})
				return err
			},
			http.StatusNotFound, codes.NotFound},
		{"unknown group", "GET", "/group/nogroup/members", adminToken, "",
			func(ctx context.Context) error {
				_, err := n.groups().ListGroupMembers(ctx, &pb.ListGroupMembersRequest{GroupId: "nogroup"})
				return err
			},
			http.StatusNotFound, codes.NotFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var body []byte
			if c.body != "" {
				body = []byte(c.body)
			}
			r := n.rest(t, c.method, c.path, c.tok, body)
			if r.status != c.wantHTTP {
				t.Fatalf("REST %s %s = %d %s, want %d", c.method, c.path, r.status, r.body, c.wantHTTP)
			}
			err := c.call(as(t, c.tok))
			code, reason := codeOf(err)
			if code != c.wantCode {
				t.Errorf("gRPC code = %v (%v), want %v", code, err, c.wantCode)
			}
			if got, want := reason, r.errorCode(t); got != want {
				t.Errorf("gRPC TPError code = %q, REST %q", got, want)
			}
			if got := grpcapi.Code(r.status, false); got != c.wantCode {
				t.Errorf("Code(%d) = %v, want %v", r.status, got, c.wantCode)
			}
		})
	}
}

func TestCodeMapping(t *testing.T) {
	// Seed 003 §3.4.
	cases := []struct {
		status    int
		retriable bool
		want      codes.Code
	}{
		{200, false, codes.OK}, {201, false, codes.OK},
		{400, false, codes.InvalidArgument}, {401, false, codes.Unauthenticated},
		{403, false, codes.PermissionDenied}, {404, false, codes.NotFound},
		{409, false, codes.AlreadyExists}, {409, true, codes.Aborted},
		{429, true, codes.ResourceExhausted}, {500, false, codes.Internal},
		{503, true, codes.Unavailable},
	}
	for _, c := range cases {
		if got := grpcapi.Code(c.status, c.retriable); got != c.want {
			t.Errorf("Code(%d, %v) = %v, want %v", c.status, c.retriable, got, c.want)
		}
	}
}
