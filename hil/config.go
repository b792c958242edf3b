package hil

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/auth"
)

// Config is the "hil" section of the config file (SPEC §9): who may
// decide at each level, how long each level waits, whom to notify, and
// what happens when the last level's deadline passes.
type Config struct {
	// Levels are the escalation levels in order; a request starts at level
	// 1 (or the escalation_level its payload names). Empty: the three
	// levels of DefaultLevels. A level listed in the file replaces the
	// defaults as a whole.
	Levels []Level `json:"levels,omitempty"`
	// DefaultAction, approve or reject, is applied by "system:escalation"
	// when the last level's deadline passes. Default reject.
	DefaultAction string `json:"default_action,omitempty"`
}

// Level is one escalation level.
type Level struct {
	// ReviewersScope is the token scope that may decide at this level
	// (admin always may).
	ReviewersScope auth.Scope `json:"reviewers_scope"`
	// DeadlineSeconds is how long the level waits for a decision.
	DeadlineSeconds int `json:"deadline_seconds"`
	// NotifyURL, if set, receives the request as JSON (POST, signed with
	// X-Synapse-Signature when p2p.callback_secret_env is set) when a
	// request reaches this level.
	NotifyURL string `json:"notify_url,omitempty"`
}

// Deadline is deadline_seconds as a duration.
func (l Level) Deadline() time.Duration { return time.Duration(l.DeadlineSeconds) * time.Second }

// MaxLevels bounds hil.levels.
const MaxLevels = 10

// DefaultLevels are the levels used when hil.levels is empty: hil:l1,
// hil:l2 and hil:l3, five minutes each.
func DefaultLevels() []Level {
	return []Level{
		{ReviewersScope: auth.ScopeHILL1, DeadlineSeconds: 300},
		{ReviewersScope: auth.ScopeHILL2, DeadlineSeconds: 300},
		{ReviewersScope: auth.ScopeHILL3, DeadlineSeconds: 300},
	}
}

// EffectiveLevels returns Levels, or DefaultLevels when it is empty.
func (c Config) EffectiveLevels() []Level {
	if len(c.Levels) == 0 {
		return DefaultLevels()
	}
	return slices.Clone(c.Levels)
}

// EffectiveDefaultAction returns DefaultAction, or reject when it is empty.
func (c Config) EffectiveDefaultAction() string {
	if c.DefaultAction == "" {
		return agent.ActionReject
	}
	return c.DefaultAction
}

// Validate reports every bad field, each as "config: hil.FIELD: problem",
// joined with errors.Join.
func (c Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("config: %s: %s", field, fmt.Sprintf(format, args...)))
	}
	if len(c.Levels) > MaxLevels {
		bad("hil.levels", "%d levels; at most %d", len(c.Levels), MaxLevels)
	}
	for i, l := range c.Levels {
		f := fmt.Sprintf("hil.levels[%d]", i)
		if !slices.Contains(auth.KnownScopes, l.ReviewersScope) {
			bad(f+".reviewers_scope", "%q is not a token scope (known: %v)", l.ReviewersScope, auth.KnownScopes)
		}
		if l.DeadlineSeconds < 1 || l.DeadlineSeconds > 30*24*3600 {
			bad(f+".deadline_seconds", "%d is outside 1..2592000 (30 days)", l.DeadlineSeconds)
		}
		if l.NotifyURL != "" {
			u, err := url.Parse(l.NotifyURL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				bad(f+".notify_url", "%q must be an absolute http or https URL", l.NotifyURL)
			}
		}
	}
	switch c.DefaultAction {
	case "", agent.ActionApprove, agent.ActionReject:
	default:
		bad("hil.default_action", "%q must be approve or reject", c.DefaultAction)
	}
	return errors.Join(errs...)
}
