package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/negotiate"
	"github.com/synapse-edge/synapse/wire"
)

// NaturalLanguageType is the task type of tier-3 natural language (seed
// 002 §8.2.4): payload {"text": "..."}, result {"text": "...",
// "answered_by": "llm" | the person's user id}. With an LLM backend
// (negotiation.llm) the backend answers; without one the task asks a
// person (need_human), whose answer is the "text" of the decision's
// approved_fields, or its notes. Contract negotiation is package
// contracts'.
const NaturalLanguageType = "natural_language"

// maxNaturalText bounds the text of one tier-3 request.
const maxNaturalText = 64 << 10

// naturalLanguage is the tier-3 handler of a, answered by the LLM backend
// of a's negotiation.llm when there is one.
func naturalLanguage(a *agent.Agent) agent.Handler {
	llm := a.Config().Negotiation.LLM.Client(a.Transport())
	return agent.Handler{
		Type: wire.SupportedTaskType{
			Type: NaturalLanguageType, Name: "Natural language", EstimatedTime: "1s-until a person answers",
			Description:  `Tier 3: answers {"text": "..."} with the LLM backend, or asks a person when there is none.`,
			Capabilities: []string{"tier_3_natural_language"},
		},
		InputSchema:  json.RawMessage(`{"type":"object","required":["text"],"properties":{"text":{"type":"string","minLength":1}}}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"},"answered_by":{"type":"string"}}}`),
		Func:         func(ctx context.Context, r *agent.Run) (any, error) { return answer(ctx, a, llm, r) },
	}
}

type naturalText struct {
	Text       string `json:"text"`
	AnsweredBy string `json:"answered_by,omitempty"`
}

func answer(ctx context.Context, a *agent.Agent, llm *negotiate.LLM, r *agent.Run) (any, error) {
	var in naturalText
	if err := r.Decode(&in); err != nil {
		return nil, err
	}
	if len(in.Text) > maxNaturalText {
		return nil, wire.Errorf(wire.CodeInvalidParams, "text is longer than %d bytes", maxNaturalText)
	}
	if llm != nil {
		r.Log("asking the LLM backend")
		reply, err := llm.Chat(ctx, []negotiate.ChatMessage{
			{Role: "system", Content: fmt.Sprintf("You are %s, a Synapse agent. Answer the request you are sent in plain text.", a.Identity().AgentName)},
			{Role: "user", Content: in.Text},
		})
		if err != nil {
			return nil, wire.Errorf(wire.CodeExecutionFailed, "%v", err)
		}
		return naturalText{Text: strings.TrimSpace(reply), AnsweredBy: "llm"}, nil
	}
	d, err := r.AskHuman(ctx, agent.HumanRequest{
		Reason:  wire.Reason{Code: "natural_language", Message: in.Text},
		Summary: in.Text,
		Options: []wire.HumanOption{{Field: "text", Value: ""}},
	})
	if err != nil {
		return nil, err
	}
	text, _ := d.Decision.ApprovedFields["text"].(string)
	if text == "" {
		text = d.Notes
	}
	return naturalText{Text: text, AnsweredBy: d.DecidedBy.UserID}, nil
}
