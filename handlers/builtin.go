package handlers

import (
	"context"
	"encoding/json"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/wire"
)

// maxSleep bounds the sleep diagnostic.
const maxSleep = time.Hour

// builtins are the diagnostics handlers every agent has unless
// disable_builtins is set.
func builtins() []agent.Handler {
	return []agent.Handler{
		{
			Type: wire.SupportedTaskType{
				Type: "echo", Name: "Echo", EstimatedTime: "0s-1s",
				Description:  "Diagnostics: the result is the payload.",
				Capabilities: []string{"diagnostics"},
			},
			Idempotent: true,
			Immediate:  true,
			Func: func(ctx context.Context, r *agent.Run) (any, error) {
				return r.Payload(), nil
			},
		},
		{
			Type: wire.SupportedTaskType{
				Type: "sleep", Name: "Sleep", EstimatedTime: "0s-1h",
				Description:  `Diagnostics: waits {"ms": N} milliseconds (cancellable); the result is {"slept_ms": N}.`,
				Capabilities: []string{"diagnostics"},
			},
			InputSchema: json.RawMessage(`{"type":"object","required":["ms"],"properties":{"ms":{"type":"integer","minimum":0,"maximum":3600000}}}`),
			Idempotent:  true,
			Func: func(ctx context.Context, r *agent.Run) (any, error) {
				var p struct {
					MS int64 `json:"ms"`
				}
				if err := r.Decode(&p); err != nil {
					return nil, err
				}
				d := min(time.Duration(p.MS)*time.Millisecond, maxSleep)
				t := time.NewTimer(d)
				defer t.Stop()
				select {
				case <-t.C:
					return map[string]int64{"slept_ms": p.MS}, nil
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			},
		},
		{
			Type: wire.SupportedTaskType{
				Type: "confirm", Name: "Confirm", EstimatedTime: "until a person decides",
				Description:  `Diagnostics: asks a person {"question": "..."} and completes with their decision (rejected if they reject).`,
				Capabilities: []string{"diagnostics", "human_in_the_loop"},
			},
			InputSchema: json.RawMessage(`{"type":"object","required":["question"],"properties":{"question":{"type":"string","minLength":1}}}`),
			Func: func(ctx context.Context, r *agent.Run) (any, error) {
				var p struct {
					Question string             `json:"question"`
					Options  []wire.HumanOption `json:"options"`
				}
				if err := r.Decode(&p); err != nil {
					return nil, err
				}
				d, err := r.AskHuman(ctx, agent.HumanRequest{
					Reason:  wire.Reason{Code: "confirmation", Message: p.Question},
					Summary: p.Question, Options: p.Options,
				})
				if err != nil {
					return nil, err
				}
				return map[string]any{"approved": true, "action": d.Decision.Action,
					"approved_fields": d.Decision.ApprovedFields, "decided_by": d.DecidedBy, "notes": d.Notes}, nil
			},
		},
	}
}
