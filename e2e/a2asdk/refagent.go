// Package a2asdk drives a Synapse agent through the official A2A SDKs
// (a2a-go v2 and @a2a-js/sdk) and holds a reference agent built on
// a2a-go's own server, so that the same assertions and the same benchmark
// run against both. It is its own module: the SDKs never enter the
// agent's go.mod.
package a2asdk

import (
	"context"
	"iter"
	"net/http"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/push"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"
)

// RefExecutor is the reference agent's executor: the task types "echo"
// (the default) and "sleep" as Synapse runs them. A message becomes a
// payload as Synapse maps it: the first data part's object with the text
// parts joined under "text"; echo answers the payload, sleep waits
// payload.ms milliseconds and answers {"slept_ms": ms}. Both answer in one
// artifact, "result", with one data part.
type RefExecutor struct{}

var _ a2asrv.AgentExecutor = RefExecutor{}

// Payload maps a message to a task type and payload as Synapse does.
func Payload(m *a2a.Message) (string, map[string]any) {
	taskType := "echo"
	if tt, ok := m.Metadata["task_type"].(string); ok && tt != "" {
		taskType = tt
	}
	var data map[string]any
	var texts []string
	for _, p := range m.Parts {
		switch c := p.Content.(type) {
		case a2a.Text:
			texts = append(texts, string(c))
		case a2a.Data:
			if d, ok := c.Value.(map[string]any); ok && data == nil {
				data = d
			}
		}
	}
	if data == nil {
		data = map[string]any{}
	}
	if len(texts) > 0 {
		data["text"] = strings.Join(texts, "\n")
	}
	return taskType, data
}

// Execute implements a2asrv.AgentExecutor.
func (RefExecutor) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		taskType, payload := Payload(ec.Message)
		if taskType != "echo" && taskType != "sleep" {
			yield(nil, a2a.NewError(a2a.ErrUnsupportedOperation, "no handler for task type "+taskType))
			return
		}
		if ec.StoredTask == nil && !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
			return
		}
		result := payload
		if taskType == "sleep" {
			ms, _ := payload["ms"].(float64)
			select {
			case <-time.After(time.Duration(ms) * time.Millisecond):
			case <-ctx.Done():
				return
			}
			result = map[string]any{"slept_ms": ms}
		}
		art := a2a.NewArtifactEvent(ec, a2a.NewDataPart(result))
		art.Artifact.ID, art.Artifact.Name, art.LastChunk = "result", "result", true
		if !yield(art, nil) {
			return
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
	}
}

// Cancel implements a2asrv.AgentExecutor.
func (RefExecutor) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// RefServer is the reference agent: a2a-go's JSON-RPC handler over its
// in-memory task store, with its in-memory push config store and HTTP
// push sender, and its card at the well-known path. base is the URL the
// handler is served at (http://host:port).
func RefServer(base string) http.Handler {
	card := &a2a.AgentCard{
		Name: "a2a-go reference", Description: "a2a-go v2 in-memory server with the echo and sleep task types",
		SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(base+"/a2a", a2a.TransportProtocolJSONRPC)},
		DefaultInputModes:   []string{"text/plain", "application/json"}, DefaultOutputModes: []string{"application/json"},
		Capabilities: a2a.AgentCapabilities{Streaming: true, PushNotifications: true},
		Skills:       []a2a.AgentSkill{{ID: "echo", Name: "echo", Description: "echo", Tags: []string{"echo"}}},
		Version:      "ref",
	}
	h := RefHandler()
	mux := http.NewServeMux()
	mux.Handle("/a2a", a2asrv.NewJSONRPCHandler(h))
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
	return mux
}

// RefHandler is the reference agent's request handler: the executor over
// a2a-go's in-memory task store, push config store and HTTP push sender.
func RefHandler() a2asrv.RequestHandler {
	anyone := func(context.Context) (string, error) { return "anyone", nil }
	return a2asrv.NewHandler(RefExecutor{},
		a2asrv.WithTaskStore(taskstore.NewInMemory(&taskstore.InMemoryStoreConfig{Authenticator: anyone})),
		a2asrv.WithPushNotifications(push.NewInMemoryStore(), push.NewHTTPPushSender(&push.HTTPSenderConfig{Timeout: 5 * time.Second})))
}

// ResultData is the data of a task's result artifact; ok is false without
// one.
func ResultData(t *a2a.Task) (map[string]any, bool) {
	for _, a := range t.Artifacts {
		if a.ID == "result" && len(a.Parts) == 1 {
			d, ok := a.Parts[0].Data().(map[string]any)
			return d, ok
		}
	}
	return nil, false
}
