package handlers

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/synapse-edge/synapse/agent"
)

// Config is what the config file says of handlers, at its top level.
type Config struct {
	// DisableBuiltins removes the echo, sleep, confirm and
	// natural_language handlers.
	DisableBuiltins bool `json:"disable_builtins,omitempty"`
	// Commands maps task types to external commands.
	Commands []Command `json:"handlers,omitempty"`
}

// Command maps a task type to an external command (SPEC §5.4).
type Command struct {
	TaskType string   `json:"task_type"`
	Command  []string `json:"command"`
	// Name is the task type's name; empty: the task type as a title
	// ("resize_image" is "Resize image").
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	// EstimatedTime is informational, e.g. "1s-10s"; empty: from 0 s to
	// the run's limit (timeout_seconds, else max_task_duration_seconds),
	// "0s-2m" for timeout_seconds 120.
	EstimatedTime string `json:"estimated_time,omitempty"`
	// Capabilities are declared with the task type, e.g. one of the
	// predefined task types of seed 000 §3.3 ("summarization") that this
	// command performs.
	Capabilities []string        `json:"capabilities,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema,omitempty"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	// TimeoutSeconds bounds one run; 0 means max_task_duration_seconds.
	TimeoutSeconds int `json:"timeout_seconds,omitempty"`
	// Idempotent tasks are run again after a restart instead of failed.
	Idempotent bool `json:"idempotent,omitempty"`
	// Disclose names, per requesting peer (agent_id, or "*" for any other),
	// the top-level result fields it may see; the rest are withheld and
	// every result sent is audited (seed 002 §8.3.2).
	Disclose []agent.DisclosureRule `json:"disclose,omitempty"`
	// PersonalData marks the payloads of this task type as personal data:
	// a peer's request needs a high contract, else it is rejected TP-NEG004.
	PersonalData bool `json:"personal_data,omitempty"`
	// Dir is the working directory; Env adds KEY=VALUE entries.
	Dir string   `json:"dir,omitempty"`
	Env []string `json:"env,omitempty"`
}

// Validate reports every bad command, each as "config: FIELD: problem"
// (only the first problem of one command), joined with errors.Join.
func (c *Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("config: %s: %s", field, fmt.Sprintf(format, args...)))
	}
	seen := map[string]bool{}
	for i, h := range c.Commands {
		f := fmt.Sprintf("handlers[%d]", i)
		switch {
		case h.TaskType == "":
			bad(f+".task_type", "must not be empty")
		case seen[h.TaskType]:
			bad(f+".task_type", "%q is configured twice", h.TaskType)
		case len(h.Command) == 0 || h.Command[0] == "":
			bad(f+".command", "must name a program")
		case h.TimeoutSeconds < 0:
			bad(f+".timeout_seconds", "must not be negative")
		}
		for j, r := range h.Disclose {
			if r.Peer == "" {
				bad(fmt.Sprintf("%s.disclose[%d].peer", f, j), "must be an agent_id or \"*\"")
			}
		}
		seen[h.TaskType] = true
	}
	return errors.Join(errs...)
}
