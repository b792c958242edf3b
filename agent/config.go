package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/synapse-edge/synapse/negotiate"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/transport/outbound"
)

// Config is the engine's configuration, as values: start from Defaults,
// set what differs, and New validates it. Its JSON tags are the config
// file's format (its top level, with the outbound and negotiation
// sections); the file's other sections are the options of the packages
// that use them (tier1 and uplink, handlers, hil, peer, httpapi,
// transport/mqtt, transport/a2aclient). Reading the file and the environment is the
// command's business (package cli/config), not the library's.
type Config struct {
	// Identity (SPEC §2). AgentID is generated at first start when empty.
	AgentID   string `json:"agent_id,omitempty"`
	AgentName string `json:"agent_name,omitempty"`
	SystemID  string `json:"system_id,omitempty"`
	// Endpoint is the base URL peers use to reach this agent; default
	// http://<Listen>.
	Endpoint string `json:"endpoint,omitempty"`

	DataDir string `json:"data_dir,omitempty"`
	Listen  string `json:"listen,omitempty"`

	// Limits of seed 000 §2.2.
	MaxConcurrentTasks     int   `json:"max_concurrent_tasks,omitempty"`
	MaxTaskDurationSeconds int   `json:"max_task_duration_seconds,omitempty"`
	MaxFileSize            int64 `json:"max_file_size,omitempty"`
	// MaxParkedTasks bounds the tasks that wait in info_needed or
	// need_human without an execution slot (their payloads are on disk).
	MaxParkedTasks int `json:"max_parked_tasks,omitempty"`

	// Approvals lists tasks that need a person's approval before they run
	// (SPEC §9), e.g. actuating a valve.
	Approvals []ApprovalRule `json:"approvals,omitempty"`

	Retention RetentionConfig `json:"retention"`
	// Outbound is the policy of URLs clients give the agent to call
	// (callback_url, A2A push): private ranges are refused unless allowed
	// here (package transport/outbound).
	Outbound outbound.Config `json:"outbound"`
	// Negotiation configures protocol contracts (SPEC §7;
	// negotiate/config.go).
	Negotiation negotiate.Config `json:"negotiation"`
	// Store is when the data file's commit log is checkpointed into the
	// file (package store).
	Store store.Config `json:"store"`

	// AdminToken is the admin bearer token; from SYNAPSE_ADMIN_TOKEN, never
	// from the file. Empty: generated at first start into DataDir/admin.token.
	AdminToken string `json:"-"`
}

// ApprovalRule makes tasks of TaskType wait for a person before they run:
// all of them, or, with Field set, those whose payload's top-level Field
// equals Equals (compared as JSON).
type ApprovalRule struct {
	TaskType string          `json:"task_type"`
	Field    string          `json:"field,omitempty"`
	Equals   json.RawMessage `json:"equals,omitempty"`
	// Reason is shown to the person; default "approval required by policy".
	Reason string `json:"reason,omitempty"`
}

// RetentionConfig bounds how many finished tasks the data file keeps.
type RetentionConfig struct {
	// MaxAgeHours drops finished tasks older than this. Default 168 (7 days).
	MaxAgeHours int `json:"max_age_hours,omitempty"`
	// KeepFinished keeps at most this many finished tasks. Default 100000.
	KeepFinished int `json:"keep_finished,omitempty"`
}

// Defaults returns the configuration used when nothing is set.
func Defaults() Config {
	return Config{
		DataDir:                "./data",
		Listen:                 "127.0.0.1:8080",
		SystemID:               "edge",
		MaxConcurrentTasks:     10,
		MaxTaskDurationSeconds: 3600,
		MaxParkedTasks:         1000,
		MaxFileSize:            10 << 20,
		Retention:              RetentionConfig{MaxAgeHours: 168, KeepFinished: 100_000},
		Store:                  store.DefaultConfig(),
	}
}

// Validate checks the fields and reports every bad one it finds, each as
// "config: FIELD: problem", joined with errors.Join (so a file with three
// mistakes is told of all three at once). Within one approval rule, only
// the first problem is named.
func (c *Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("config: %s: %s", field, fmt.Sprintf(format, args...)))
	}
	if c.DataDir == "" {
		bad("data_dir", "must not be empty")
	}
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		bad("listen", "%q is not HOST:PORT", c.Listen)
	}
	if c.MaxConcurrentTasks < 1 || c.MaxConcurrentTasks > 100_000 {
		bad("max_concurrent_tasks", "%d is outside 1..100000", c.MaxConcurrentTasks)
	}
	if c.MaxParkedTasks < 1 || c.MaxParkedTasks > 1_000_000 {
		bad("max_parked_tasks", "%d is outside 1..1000000", c.MaxParkedTasks)
	}
	if c.MaxTaskDurationSeconds < 1 {
		bad("max_task_duration_seconds", "must be at least 1")
	}
	if c.MaxFileSize < 1 {
		bad("max_file_size", "must be at least 1")
	}
	if c.Retention.MaxAgeHours < 1 {
		bad("retention.max_age_hours", "must be at least 1")
	}
	if c.Retention.KeepFinished < 1 {
		bad("retention.keep_finished", "must be at least 1")
	}
	for _, id := range []struct{ field, v string }{{"agent_id", c.AgentID}, {"agent_name", c.AgentName}, {"system_id", c.SystemID}} {
		if strings.ContainsAny(id.v, " \t\r\n/") || len(id.v) > 128 {
			bad(id.field, "%q must be at most 128 bytes without spaces or slashes", id.v)
		}
	}
	if c.SystemID == "" {
		bad("system_id", "must not be empty")
	}
	for i, r := range c.Approvals {
		f := fmt.Sprintf("approvals[%d]", i)
		switch {
		case r.TaskType == "":
			bad(f+".task_type", "must not be empty")
		case r.Field != "" && len(r.Equals) == 0:
			bad(f+".equals", "is required with field")
		case len(r.Equals) > 0 && !json.Valid(r.Equals):
			bad(f+".equals", "is not valid JSON")
		}
	}
	for i, s := range c.Outbound.Allow {
		if _, err := outbound.ParseRange(s); err != nil {
			bad(fmt.Sprintf("outbound.allow[%d]", i), "%v", err)
		}
	}
	c.Negotiation.Check(func(field, format string, args ...any) { bad("negotiation."+field, format, args...) })
	c.Store.Check(func(field, format string, args ...any) { bad("store."+field, format, args...) })
	return errors.Join(errs...)
}

// TaskDuration is max_task_duration_seconds as a duration.
func (c *Config) TaskDuration() time.Duration {
	return time.Duration(c.MaxTaskDurationSeconds) * time.Second
}
