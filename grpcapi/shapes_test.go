//go:build grpc

package grpcapi_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/grpcapi"
	"github.com/synapse-edge/synapse/internal/testutil"
	pb "github.com/synapse-edge/synapse/proto"
	"github.com/synapse-edge/synapse/wire"
)

// shape says how a gRPC message carries a REST answer.
type shape struct {
	// doc is the gRPC field that carries the whole REST answer as JSON
	// text (details_json), or "".
	doc string
	// grpcOnly are the gRPC fields the REST answer lacks, each with the
	// reason.
	grpcOnly map[string]string
	// varies are the keys whose values differ because the two answers
	// are of two objects (two tasks submitted): only their presence is
	// compared.
	varies []string
	// nested are the shapes of message fields (a list's elements).
	nested map[string]shape
	// docScalars lets doc carry scalar keys too: the message is the
	// seed's, whose few fields stand beside the whole record (a group's).
	docScalars bool
}

// taskShape is how TaskStatusResponse carries GET /task/{id}: scalars as
// fields, the structured values (payload, history, missing_fields,
// origin, human) in details_json, the whole answer.
var taskShape = shape{doc: "details_json"}

// TestAnswersSameOverRESTAndGRPC: each gRPC answer carries the fields of
// its REST twin, with the same values, checked key by key from the two
// answers themselves, so that a field added to one binding and not to the
// other fails here:
//
//   - each key of the REST answer is a field of the gRPC message of the
//     same name, or <key>_json (the same value as JSON text), or, for an
//     object or array, a key of the message's whole-answer document
//     (details_json);
//   - each field the gRPC message sets is a key of the REST answer (or
//     <key>_json of one), or the whole-answer document, equal to the REST
//     answer, or is listed with the reason REST lacks it.
//
// Groups: the seed's CreateGroupResponse has the record whole in
// group_json. Errors carry the TPError: the code as ErrorInfo.reason, details (with
// numeric_code 4004 or 2004) as its metadata, retriable as a RetryInfo.
func TestAnswersSameOverRESTAndGRPC(t *testing.T) {
	n := startNode(t, "shapes", withAgentConfig(func(c *agent.Config) {
		c.MaxTaskDurationSeconds = 1 // a sleep of 30 s fails execution_timeout (2004)
		c.MaxConcurrentTasks = 3     // the fourth task is rate_limited (4004)
	}))
	tc := n.tasks()
	ctx := as(t, adminToken)
	submitREST := func(t *testing.T, body string) map[string]any {
		t.Helper()
		r := n.rest(t, "POST", "/task", adminToken, []byte(body))
		if r.status != http.StatusCreated {
			t.Fatalf("POST /task %s: %d %s", body, r.status, r.body)
		}
		return r.object(t)
	}
	submitGRPC := func(t *testing.T, req *pb.SubmitTaskRequest) *pb.SubmitTaskResponse {
		t.Helper()
		g, err := tc.SubmitTask(ctx, req)
		if err != nil {
			t.Fatalf("SubmitTask %v: %v", req, err)
		}
		return g
	}
	get := func(t *testing.T, path string) map[string]any {
		t.Helper()
		r := n.rest(t, "GET", path, adminToken, nil)
		if r.status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, r.status, r.body)
		}
		return r.object(t)
	}

	t.Run("SubmitTask", func(t *testing.T) {
		rest := submitREST(t, `{"task_type":"echo","payload":{"n":1}}`)
		g := submitGRPC(t, &pb.SubmitTaskRequest{TaskType: "echo", PayloadJson: `{"n":1}`})
		sameShape(t, "SubmitTask", rest, g.ProtoReflect(), shape{varies: []string{"task_id", "status"}})
	})

	done := submitGRPC(t, &pb.SubmitTaskRequest{TaskType: "echo", PayloadJson: `{"n":2}`}).GetTaskId()
	n.waitTask(t, done)
	timedOut := submitGRPC(t, &pb.SubmitTaskRequest{TaskType: "sleep", PayloadJson: `{"ms":30000}`}).GetTaskId()
	if st := n.waitTask(t, timedOut); st.GetErrorCode() != string(wire.CodeExecutionTimeout) {
		t.Fatalf("the sleep past max_task_duration_seconds: %v, want failed %s", st, wire.CodeExecutionTimeout)
	}
	for _, c := range []struct{ name, id, path string }{
		{"GetTask completed", done, "/task/" + done},
		{"GetTask execution_timeout", timedOut, "/task/" + timedOut},
		{"GetTaskStatus execution_timeout", timedOut, "/task/" + timedOut + "/status"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rest := get(t, c.path)
			var g *pb.TaskStatusResponse
			var err error
			if strings.HasPrefix(c.name, "GetTaskStatus") {
				g, err = tc.GetTaskStatus(ctx, &pb.GetTaskRequest{TaskId: c.id})
			} else {
				g, err = tc.GetTask(ctx, &pb.GetTaskRequest{TaskId: c.id})
			}
			if err != nil {
				t.Fatal(err)
			}
			sameShape(t, c.name, rest, g.ProtoReflect(), taskShape)
			if c.id == timedOut && (g.GetNumericCode() != wire.NumericTaskTooLong || rest["numeric_code"] != float64(wire.NumericTaskTooLong)) {
				t.Errorf("numeric_code gRPC %d, REST %v; want %d on both", g.GetNumericCode(), rest["numeric_code"], wire.NumericTaskTooLong)
			}
		})
	}

	t.Run("StreamTaskStatus", func(t *testing.T) {
		sse := n.rest(t, "GET", "/task/"+timedOut+"/stream", adminToken, nil)
		evs := sseEvents(t, sse.body)
		stream, err := tc.StreamTaskStatus(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := stream.Send(&pb.TaskStatusStreamRequest{TaskId: timedOut}); err != nil {
			t.Fatal(err)
		}
		_ = stream.CloseSend()
		var got []*pb.TaskStatusUpdate
		for range len(evs) + 1 {
			u, err := stream.Recv()
			if err != nil {
				break
			}
			got = append(got, u)
		}
		if len(got) != len(evs) {
			t.Fatalf("gRPC sent %d events, SSE %d", len(got), len(evs))
		}
		var sawNumeric bool
		for i, e := range evs {
			u := got[i]
			if fmt.Sprint(u.GetSeq()) != e.id || u.GetEventType() != e.event || u.GetTaskId() != timedOut {
				t.Errorf("event %d: gRPC %v, SSE id %s event %s", i, u, e.id, e.event)
			}
			sameJSON(t, fmt.Sprintf("event %s data", e.id), e.data, u.GetDataJson())
			if d, _ := e.data.(map[string]any); d["numeric_code"] == float64(wire.NumericTaskTooLong) {
				sawNumeric = true
			}
		}
		if !sawNumeric {
			t.Errorf("no event carries numeric_code %d: %s", wire.NumericTaskTooLong, sse.body)
		}
	})

	t.Run("CancelTask", func(t *testing.T) {
		a := submitREST(t, `{"task_type":"sleep","payload":{"ms":30000}}`)["task_id"].(string)
		b := submitGRPC(t, &pb.SubmitTaskRequest{TaskType: "sleep", PayloadJson: `{"ms":30000}`}).GetTaskId()
		r := n.rest(t, "POST", "/task/"+a+"/cancel", adminToken, nil)
		if r.status != http.StatusOK {
			t.Fatalf("POST /task/%s/cancel: %d %s", a, r.status, r.body)
		}
		g, err := tc.CancelTask(ctx, &pb.CancelTaskRequest{TaskId: b})
		if err != nil {
			t.Fatal(err)
		}
		if g.GetTaskId() != b || g.GetStatus() != g.GetTask().GetStatus() {
			t.Errorf("CancelTask = %v", g)
		}
		// Two tasks: their ids, times and etags differ.
		sh := taskShape
		sh.varies = []string{"task_id", "created_at", "updated_at", "etag"}
		sameShape(t, "CancelTask", r.object(t), g.GetTask().ProtoReflect(), sh)

		// A cancel of a completed task is refused alike: 409
		// task_already_completed.
		r = n.rest(t, "POST", "/task/"+done+"/cancel", adminToken, nil)
		_, err = tc.CancelTask(ctx, &pb.CancelTaskRequest{TaskId: done})
		sameError(t, "cancel of a completed task", r, http.StatusConflict, err)
	})

	t.Run("rate_limited", func(t *testing.T) {
		var ids []string
		for i := range 3 {
			ids = append(ids, submitGRPC(t, &pb.SubmitTaskRequest{TaskType: "sleep", PayloadJson: fmt.Sprintf(`{"ms":%d}`, 30000+i)}).GetTaskId())
		}
		testutil.Eventually(t, pollTimeout, "three tasks running", func() bool {
			g, err := tc.ListTasks(ctx, &pb.ListTasksRequest{Status: string(wire.StatusExecuting)})
			return err == nil && len(g.GetTasks()) == 3
		})
		r := n.rest(t, "POST", "/task", adminToken, []byte(`{"task_type":"echo"}`))
		_, err := tc.SubmitTask(ctx, &pb.SubmitTaskRequest{TaskType: "echo"})
		sameError(t, "over max_concurrent_tasks", r, http.StatusTooManyRequests, err)
		if md := errorInfo(err).GetMetadata(); md["numeric_code"] != fmt.Sprint(wire.NumericTooManyTasks) {
			t.Errorf("gRPC ErrorInfo metadata %v, want numeric_code %d", md, wire.NumericTooManyTasks)
		}
		for _, id := range ids {
			if _, err := tc.CancelTask(ctx, &pb.CancelTaskRequest{TaskId: id}); err != nil {
				t.Fatal(err)
			}
			n.waitTask(t, id)
		}
	})

	t.Run("ListTasks", func(t *testing.T) {
		rest := get(t, "/tasks?status=failed")
		g, err := tc.ListTasks(ctx, &pb.ListTasksRequest{Status: string(wire.StatusFailed)})
		if err != nil {
			t.Fatal(err)
		}
		if len(g.GetTasks()) == 0 {
			t.Fatal("no failed task listed")
		}
		sameShape(t, "ListTasks", rest, g.ProtoReflect(), shape{nested: map[string]shape{"tasks": taskShape}})
	})

	t.Run("SendMessage", func(t *testing.T) {
		p := startNode(t, "shapes-peer")
		n.pair(t, p)
		pid := p.a.Identity().AgentID
		r := n.rest(t, "POST", "/message", adminToken, []byte(`{"receiver_id":"`+pid+`","content_type":"text","payload_json":"\"hi\""}`))
		if r.status != http.StatusAccepted {
			t.Fatalf("POST /message SendMessage: %d %s", r.status, r.body)
		}
		g, err := n.messages().SendMessage(ctx, &pb.SendMessageRequest{ReceiverId: pid, ContentType: "text", PayloadJson: `"hi"`})
		if err != nil {
			t.Fatal(err)
		}
		sameShape(t, "SendMessage", r.object(t), g.ProtoReflect(), shape{varies: []string{"message_id"}})
	})

	t.Run("groups", func(t *testing.T) {
		r := n.rest(t, "POST", "/group", adminToken, []byte(`{"name":"shapes-rest"}`))
		if r.status != http.StatusCreated {
			t.Fatalf("POST /group: %d %s", r.status, r.body)
		}
		g, err := n.groups().CreateGroup(ctx, &pb.CreateGroupRequest{Name: "shapes-rest"})
		if err != nil {
			t.Fatal(err)
		}
		// Two groups: their ids and times differ. The seed's
		// CreateGroupResponse has group_id and status beside the record.
		sh := shape{doc: "group_json", docScalars: true, varies: []string{"group_id", "created_at", "updated_at", "members"}}
		sameShape(t, "CreateGroup", r.object(t), g.ProtoReflect(), sh)

		id := g.GetGroupId()
		rest := get(t, "/group/"+id+"/members")
		m, err := n.groups().ListGroupMembers(ctx, &pb.ListGroupMembersRequest{GroupId: id})
		if err != nil {
			t.Fatal(err)
		}
		sameShape(t, "ListGroupMembers", rest, m.ProtoReflect(), shape{})
	})

	t.Run("HealthCheck", func(t *testing.T) {
		rest := get(t, "/health")
		g, err := pb.NewHealthServiceClient(n.conn).HealthCheck(ctx, &emptypb.Empty{})
		if err != nil {
			t.Fatal(err)
		}
		// The REST server and the gRPC server of the harness are built
		// with their own version strings; a second may pass between.
		sameShape(t, "HealthCheck", rest, g.ProtoReflect(), shape{varies: []string{"uptime_seconds", "version"}})
	})
}

// sameShape checks that the gRPC message g carries the REST answer rest
// as the test's comment says.
func sameShape(t *testing.T, where string, rest map[string]any, g protoreflect.Message, sh shape) {
	t.Helper()
	fields := g.Descriptor().Fields()
	var doc map[string]any
	if sh.doc != "" {
		f := fields.ByName(protoreflect.Name(sh.doc))
		if f == nil {
			t.Fatalf("%s: %s has no field %s", where, g.Descriptor().FullName(), sh.doc)
		}
		if err := json.Unmarshal([]byte(g.Get(f).String()), &doc); err != nil {
			t.Errorf("%s: %s is not a JSON object: %v", where, sh.doc, err)
		}
	}
	varies := func(k string) bool { return slices.Contains(sh.varies, k) }
	covered := map[protoreflect.Name]bool{}
	for k, v := range rest {
		name := protoreflect.Name(k)
		if f := fields.ByName(name); f != nil {
			covered[name] = true
			if !varies(k) {
				sameField(t, where+"."+k, v, g, f, sh.nested[k])
			}
			continue
		}
		if f := fields.ByName(name + "_json"); f != nil && f.Kind() == protoreflect.StringKind {
			covered[name+"_json"] = true
			if !varies(k) {
				sameJSON(t, where+"."+k, v, g.Get(f).String())
			}
			continue
		}
		var structured bool
		switch v.(type) {
		case map[string]any, []any:
			structured = true
		}
		if doc != nil && (structured || sh.docScalars) {
			if dv, ok := doc[k]; !ok {
				t.Errorf("%s: %s lacks the REST answer's %q", where, sh.doc, k)
			} else if !varies(k) && !reflect.DeepEqual(dv, v) {
				t.Errorf("%s: %s.%s = %v, REST %v", where, sh.doc, k, dv, v)
			}
			continue
		}
		t.Errorf("%s: the REST answer has %q (%v); %s has no field for it", where, k, v, g.Descriptor().FullName())
	}
	g.Range(func(f protoreflect.FieldDescriptor, val protoreflect.Value) bool {
		switch name := f.Name(); {
		case covered[name]:
		case string(name) == sh.doc:
			want, got := maps.Clone(rest), maps.Clone(doc)
			for _, k := range sh.varies {
				delete(want, k)
				delete(got, k)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: %s is not the REST answer:\n%s %v\nREST %v", where, name, name, got, want)
			}
		case sh.grpcOnly[string(name)] != "":
		default:
			t.Errorf("%s: gRPC sets %q (%v), which the REST answer lacks", where, name, val)
		}
		return true
	})
}

// sameField compares the REST value v with the field f of g: element by
// element for messages (with shape sh), else as the REST value read into
// the message.
func sameField(t *testing.T, where string, v any, g protoreflect.Message, f protoreflect.FieldDescriptor, sh shape) {
	t.Helper()
	if f.Kind() == protoreflect.MessageKind {
		switch {
		case f.IsList():
			items, _ := v.([]any)
			list := g.Get(f).List()
			if v == nil && list.Len() == 0 {
				return
			}
			if len(items) != list.Len() {
				t.Errorf("%s: REST has %d items, gRPC %d", where, len(items), list.Len())
				return
			}
			for i := range items {
				obj, ok := items[i].(map[string]any)
				if !ok {
					t.Errorf("%s[%d]: REST %v is not an object", where, i, items[i])
					continue
				}
				sameShape(t, fmt.Sprintf("%s[%d]", where, i), obj, list.Get(i).Message(), sh)
			}
			return
		case !f.IsMap():
			obj, ok := v.(map[string]any)
			if !ok {
				if v != nil || g.Has(f) {
					t.Errorf("%s: REST %v, gRPC %v", where, v, g.Get(f))
				}
				return
			}
			sameShape(t, where, obj, g.Get(f).Message(), sh)
			return
		}
	}
	b, err := json.Marshal(map[string]any{string(f.Name()): v})
	if err != nil {
		t.Fatal(err)
	}
	fromREST := g.New()
	if err := json.Unmarshal(b, fromREST.Interface()); err != nil {
		t.Errorf("%s: the REST value %v does not fit the gRPC field (%v): %v", where, v, f.Kind(), err)
		return
	}
	want := g.New()
	if g.Has(f) {
		want.Set(f, g.Get(f))
	}
	if !proto.Equal(fromREST.Interface(), want.Interface()) {
		t.Errorf("%s: REST %v, gRPC %v", where, v, g.Get(f))
	}
}

// sameJSON compares a REST value with a gRPC field holding JSON text.
func sameJSON(t *testing.T, where string, v any, text string) {
	t.Helper()
	var got any
	if text != "" {
		if err := json.Unmarshal([]byte(text), &got); err != nil {
			t.Errorf("%s: gRPC %q is not JSON: %v", where, text, err)
			return
		}
	}
	if !reflect.DeepEqual(got, v) {
		t.Errorf("%s: gRPC %s, REST %v", where, text, v)
	}
}

// errorInfo is the Synapse ErrorInfo of a gRPC status error.
func errorInfo(err error) *errdetails.ErrorInfo {
	st, _ := status.FromError(err)
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == grpcapi.ErrorDomain {
			return info
		}
	}
	return nil
}

// sameError checks that a REST refusal (with HTTP status want) and a gRPC
// error carry the same TPError: the code (ErrorInfo.reason), the message,
// each detail (ErrorInfo.metadata), retriable (a RetryInfo) and the
// correlation_id (metadata).
func sameError(t *testing.T, where string, r restReply, want int, err error) {
	t.Helper()
	if r.status != want {
		t.Fatalf("%s: REST %d %s, want %d", where, r.status, r.body, want)
	}
	var body struct {
		Error struct {
			Code          string         `json:"code"`
			Message       string         `json:"message"`
			Details       map[string]any `json:"details"`
			Retriable     bool           `json:"retriable"`
			CorrelationID string         `json:"correlation_id"`
		} `json:"error"`
	}
	if jerr := json.Unmarshal(r.body, &body); jerr != nil {
		t.Fatalf("%s: REST %s: %v", where, r.body, jerr)
	}
	e := body.Error
	st, _ := status.FromError(err)
	info := errorInfo(err)
	if err == nil || info == nil {
		t.Fatalf("%s: gRPC %v, want the TPError %s", where, err, r.body)
	}
	if st.Code() != grpcapi.Code(want, e.Retriable) || info.GetReason() != e.Code || st.Message() != e.Message {
		t.Errorf("%s: gRPC %v %s %q, REST %d %s %q", where, st.Code(), info.GetReason(), st.Message(), r.status, e.Code, e.Message)
	}
	md := map[string]string{}
	for k, v := range e.Details {
		md[k] = fmt.Sprint(v)
	}
	if e.CorrelationID != "" {
		md["correlation_id"] = e.CorrelationID
	}
	if got := info.GetMetadata(); !maps.Equal(got, md) {
		t.Errorf("%s: gRPC metadata %v, REST details %v", where, got, md)
	}
	var retry *errdetails.RetryInfo
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			retry = ri
		}
	}
	if (retry != nil) != e.Retriable {
		t.Errorf("%s: gRPC RetryInfo %v, REST retriable %v", where, retry, e.Retriable)
	}
}

// sseEvent is one event of a text/event-stream.
type sseEvent struct {
	id, event string
	data      any
}

// sseEvents parses a finished SSE stream.
func sseEvents(t *testing.T, body []byte) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	var data []byte
	for _, line := range append(strings.Split(string(body), "\n"), "") {
		switch {
		case line == "":
			if cur.event != "" {
				if err := json.Unmarshal(data, &cur.data); err != nil {
					t.Fatalf("SSE data %q: %v", data, err)
				}
				out = append(out, cur)
			}
			cur, data = sseEvent{}, nil
		case strings.HasPrefix(line, "id:"):
			cur.id = strings.TrimSpace(line[3:])
		case strings.HasPrefix(line, "event:"):
			cur.event = strings.TrimSpace(line[6:])
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimSpace(line[5:])...)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no SSE events in %q", body)
	}
	return out
}
