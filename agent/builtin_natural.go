package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/synapse-edge/synapse/negotiate"
	"github.com/synapse-edge/synapse/wire"
)

// The built-in natural_language task type. It belongs to the engine (a
// handler like those of builtin.go); contract negotiation is package
// contracts'.

// NaturalLanguageType is the task type of tier-3 natural language (seed
// 002 §8.2.4): payload {"text": "..."}, result {"text": "...",
// "answered_by": "llm" | the person's user id}. With an LLM backend the
// backend answers; without one the task asks a person (need_human), whose
// answer is the "text" of the decision's approved_fields, or its notes.
const NaturalLanguageType = "natural_language"

// maxNaturalText bounds the text of one tier-3 request.
const maxNaturalText = 64 << 10

// LLMClient is the configured LLM backend (negotiation.llm: the tier-2
// session mappings package contracts asks it for, and the natural_language
// handler below), nil when there is none.
func (a *Agent) LLMClient() *negotiate.LLM {
	l := a.cfg.Negotiation.LLM
	if l == nil {
		return nil
	}
	return &negotiate.LLM{URL: l.URL, Model: l.Model, APIKey: l.APIKey,
		Transport: a.transport, Timeout: l.Timeout()}
}

// registerNaturalLanguage adds the tier-3 handler unless the built-in
// handlers are disabled or a handler of that type is configured.
func (a *Agent) registerNaturalLanguage() error {
	if a.cfg.DisableBuiltins || a.handlers.get(NaturalLanguageType) != nil {
		return nil
	}
	return a.Handle(Handler{
		Type: wire.SupportedTaskType{
			Type: NaturalLanguageType, Name: "Natural language", EstimatedTime: "1s-until a person answers",
			Description:  `Tier 3: answers {"text": "..."} with the LLM backend, or asks a person when there is none.`,
			Capabilities: []string{"tier_3_natural_language"},
		},
		InputSchema:  json.RawMessage(`{"type":"object","required":["text"],"properties":{"text":{"type":"string","minLength":1}}}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"},"answered_by":{"type":"string"}}}`),
		Func:         a.naturalLanguage,
	})
}

type naturalText struct {
	Text       string `json:"text"`
	AnsweredBy string `json:"answered_by,omitempty"`
}

func (a *Agent) naturalLanguage(ctx context.Context, r *Run) (any, error) {
	var in naturalText
	if err := r.Decode(&in); err != nil {
		return nil, err
	}
	if len(in.Text) > maxNaturalText {
		return nil, wire.Errorf(wire.CodeInvalidParams, "text is longer than %d bytes", maxNaturalText)
	}
	if llm := a.LLMClient(); llm != nil {
		r.Log("asking the LLM backend")
		reply, err := llm.Chat(ctx, []negotiate.ChatMessage{
			{Role: "system", Content: fmt.Sprintf("You are %s, a Synapse agent. Answer the request you are sent in plain text.", a.identity.AgentName)},
			{Role: "user", Content: in.Text},
		})
		if err != nil {
			return nil, wire.Errorf(wire.CodeExecutionFailed, "%v", err)
		}
		return naturalText{Text: strings.TrimSpace(reply), AnsweredBy: "llm"}, nil
	}
	d, err := r.AskHuman(ctx, HumanRequest{
		Reason:  wire.Reason{Code: "natural_language", Message: in.Text},
		Summary: in.Text,
		Options: []wire.HumanOption{{Field: "text", Value: ""}},
	})
	if err != nil {
		return nil, err
	}
	answer, _ := d.Decision.ApprovedFields["text"].(string)
	if answer == "" {
		answer = d.Notes
	}
	return naturalText{Text: answer, AnsweredBy: d.DecidedBy.UserID}, nil
}
