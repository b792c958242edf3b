package negotiate_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/negotiate"
	"github.com/synapse-edge/synapse/transport/httptransport"
)

const (
	reqIn  = `{"type":"object","required":["patient","claim_no"],"properties":{"patient":{"type":"string"},"claim_no":{"type":"integer"},"note":{"type":"string"}}}`
	reqOut = `{"type":"object","required":["approved"],"properties":{"approved":{"type":"boolean"},"comment":{"type":"string"}}}`
)

var locals = []negotiate.LocalType{
	{TaskType: "claims.lookup",
		InputSchema:  json.RawMessage(`{"type":"object","required":["name","number"],"properties":{"name":{"type":"string"},"number":{"type":"integer"}}}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"},"text":{"type":"string"}}}`)},
	{TaskType: "echo"},
}

func goodMapping() *negotiate.Mapping {
	return &negotiate.Mapping{SessionTaskType: "claim_consultation", TaskType: "claims.lookup",
		Input:  map[string]string{"name": "patient", "number": "claim_no"},
		Output: map[string]string{"approved": "ok", "comment": "text"}}
}

func TestValidateMapping(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(m *negotiate.Mapping)
		msg  string
	}{
		{"valid", func(m *negotiate.Mapping) {}, ""},
		{"unknown task type", func(m *negotiate.Mapping) { m.TaskType = "teleport" }, "not a task type"},
		{"no session type", func(m *negotiate.Mapping) { m.SessionTaskType = "" }, "session_task_type"},
		{"input key not local", func(m *negotiate.Mapping) { m.Input["age"] = "patient" }, `"age" is not in the target`},
		{"input value not requested", func(m *negotiate.Mapping) { m.Input["name"] = "person" }, `"person", which is not in the source`},
		{"required input unmapped", func(m *negotiate.Mapping) { delete(m.Input, "number") }, `required input field "number"`},
		{"input types differ", func(m *negotiate.Mapping) { m.Input["number"] = "note" }, `is "integer" but "note" is "string"`},
		{"required output unmapped", func(m *negotiate.Mapping) { delete(m.Output, "approved") }, `required output field "approved"`},
		{"output value not local", func(m *negotiate.Mapping) { m.Output["comment"] = "remark" }, `"remark", which is not in the source`},
		{"output types differ", func(m *negotiate.Mapping) { m.Output["approved"] = "text" }, `is "boolean" but "text" is "string"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := goodMapping()
			tc.edit(m)
			err := negotiate.ValidateMapping(m, []byte(reqIn), []byte(reqOut), locals)
			switch {
			case tc.msg == "" && err != nil:
				t.Fatalf("ValidateMapping: %v", err)
			case tc.msg != "" && (!errors.Is(err, negotiate.ErrMapping) || !strings.Contains(err.Error(), tc.msg)):
				t.Fatalf("ValidateMapping = %v, want ErrMapping mentioning %s", err, tc.msg)
			}
		})
	}
	if err := negotiate.ValidateMapping(goodMapping(), []byte(`[`), []byte(reqOut), locals); !errors.Is(err, negotiate.ErrMapping) {
		t.Errorf("a broken schema: %v, want ErrMapping", err)
	}
}

func TestMapInputOutput(t *testing.T) {
	m := goodMapping()
	in, err := m.MapInput([]byte(`{"patient":"Zhang","claim_no":42,"note":"dropped"}`))
	if err != nil || string(in) != `{"name":"Zhang","number":42}` {
		t.Errorf("MapInput = %s, %v", in, err)
	}
	out, err := m.MapOutput([]byte(`{"ok":true,"text":"fine","extra":1}`))
	if err != nil || string(out) != `{"approved":true,"comment":"fine"}` {
		t.Errorf("MapOutput = %s, %v", out, err)
	}
	if _, err := m.MapInput([]byte(`[1]`)); !errors.Is(err, negotiate.ErrMapping) {
		t.Errorf("MapInput of an array: %v, want ErrMapping", err)
	}
}

func TestParseMapping(t *testing.T) {
	answer := "Here you go:\n```json\n{\"task_type\":\"claims.lookup\",\"input\":{\"name\":\"patient\",\"number\":\"claim_no\"},\"output\":{\"approved\":\"ok\"}}\n```"
	m, err := negotiate.ParseMapping(answer, "claim_consultation")
	if err != nil {
		t.Fatal(err)
	}
	if m.SessionTaskType != "claim_consultation" || m.TaskType != "claims.lookup" || m.Input["number"] != "claim_no" || m.Output["approved"] != "ok" {
		t.Errorf("ParseMapping = %+v", m)
	}
	if _, err := negotiate.ParseMapping("I cannot help with that.", "s"); !errors.Is(err, negotiate.ErrMapping) {
		t.Errorf("ParseMapping of prose: %v, want ErrMapping", err)
	}
	req := negotiate.Request{SessionPurpose: "claim_consultation", InputSchema: []byte(reqIn), OutputSchema: []byte(reqOut)}
	msgs := negotiate.MappingPrompt(&req, locals)
	if len(msgs) != 2 || msgs[0].Role != "system" || !strings.Contains(msgs[1].Content, "claims.lookup") || !strings.Contains(msgs[1].Content, "claim_no") {
		t.Errorf("MappingPrompt = %+v, want a system and a user message naming both sides' fields", msgs)
	}
	if got := (&negotiate.Request{}).SessionType(); got != negotiate.DefaultSessionType {
		t.Errorf("SessionType() without a purpose = %q", got)
	}
}

// chatServer is a stand-in for an OpenAI-compatible server: it checks the
// request and answers with reply (or status with an error object).
func chatServer(t *testing.T, status int, reply string) (*httptest.Server, *[]map[string]any) {
	t.Helper()
	var seen []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			http.Error(w, "wrong route "+r.URL.Path, http.StatusNotFound)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var req map[string]any
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req["authorization"] = r.Header.Get("Authorization")
		seen = append(seen, req)
		w.Header().Set("Content-Type", "application/json")
		if status != http.StatusOK {
			w.WriteHeader(status)
			_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": reply}})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "x", "object": "chat.completion",
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": reply}, "finish_reason": "stop"}}})
	}))
	t.Cleanup(srv.Close)
	return srv, &seen
}

func TestLLMChat(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	t.Run("answer", func(t *testing.T) {
		srv, seen := chatServer(t, http.StatusOK, "forty-two")
		c := &negotiate.LLM{URL: srv.URL + "/v1/", Model: "tiny", APIKey: "k1", Transport: httptransport.New(httptransport.Options{})}
		got, err := c.Chat(ctx, []negotiate.ChatMessage{{Role: "user", Content: "the answer?"}})
		if err != nil || got != "forty-two" {
			t.Fatalf("Chat = %q, %v", got, err)
		}
		req := (*seen)[0]
		msgs, _ := req["messages"].([]any)
		if req["model"] != "tiny" || req["authorization"] != "Bearer k1" || len(msgs) != 1 || req["temperature"] != 0.0 {
			t.Errorf("request = %v", req)
		}
	})
	t.Run("full path and no key", func(t *testing.T) {
		srv, seen := chatServer(t, http.StatusOK, "ok")
		c := &negotiate.LLM{URL: srv.URL + "/v1/chat/completions", Model: "m", Transport: httptransport.New(httptransport.Options{})}
		if _, err := c.Chat(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if (*seen)[0]["authorization"] != "" {
			t.Errorf("Authorization sent without a key: %v", (*seen)[0]["authorization"])
		}
	})
	t.Run("error status", func(t *testing.T) {
		srv, _ := chatServer(t, http.StatusUnauthorized, "bad key")
		c := &negotiate.LLM{URL: srv.URL + "/v1", Model: "m", Transport: httptransport.New(httptransport.Options{})}
		if _, err := c.Chat(ctx, nil); !errors.Is(err, negotiate.ErrLLM) || !strings.Contains(err.Error(), "401: bad key") {
			t.Fatalf("Chat = %v, want ErrLLM with the status and message", err)
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		srv, _ := chatServer(t, http.StatusOK, "")
		url := srv.URL
		srv.Close()
		c := &negotiate.LLM{URL: url + "/v1", Model: "m", Transport: httptransport.New(httptransport.Options{})}
		if _, err := c.Chat(ctx, nil); !errors.Is(err, negotiate.ErrLLM) {
			t.Fatalf("Chat = %v, want ErrLLM", err)
		}
	})
}
