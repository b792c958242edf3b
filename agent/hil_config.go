package agent

import (
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/synapse-edge/synapse/auth"
)

// HILConfig configures the human-in-the-loop escalation (SPEC §9) that
// package hil runs: who may decide at each level, how long each level
// waits, whom to notify, and what happens when the last level's deadline
// passes.
type HILConfig struct {
	// Levels are the escalation levels in order; a request starts at level
	// 1 (or the escalation_level its payload names). Empty: the three
	// levels of DefaultHILLevels. A level listed in the file replaces the
	// defaults as a whole.
	Levels []HILLevel `json:"levels,omitempty"`
	// DefaultAction, approve or reject, is applied by "system:escalation"
	// when the last level's deadline passes. Default reject.
	DefaultAction string `json:"default_action,omitempty"`
}

// HILLevel is one escalation level.
type HILLevel struct {
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
func (l HILLevel) Deadline() time.Duration { return time.Duration(l.DeadlineSeconds) * time.Second }

// MaxHILLevels bounds hil.levels.
const MaxHILLevels = 10

// DefaultHILLevels are the levels used when hil.levels is empty: hil:l1,
// hil:l2 and hil:l3, five minutes each.
func DefaultHILLevels() []HILLevel {
	return []HILLevel{
		{ReviewersScope: auth.ScopeHILL1, DeadlineSeconds: 300},
		{ReviewersScope: auth.ScopeHILL2, DeadlineSeconds: 300},
		{ReviewersScope: auth.ScopeHILL3, DeadlineSeconds: 300},
	}
}

// EffectiveLevels returns Levels, or DefaultHILLevels when it is empty.
func (h HILConfig) EffectiveLevels() []HILLevel {
	if len(h.Levels) == 0 {
		return DefaultHILLevels()
	}
	return slices.Clone(h.Levels)
}

// EffectiveDefaultAction returns DefaultAction, or reject when it is empty.
func (h HILConfig) EffectiveDefaultAction() string {
	if h.DefaultAction == "" {
		return ActionReject
	}
	return h.DefaultAction
}

// check reports every bad field through bad.
func (h HILConfig) check(bad func(field, format string, args ...any)) {
	if len(h.Levels) > MaxHILLevels {
		bad("hil.levels", "%d levels; at most %d", len(h.Levels), MaxHILLevels)
	}
	for i, l := range h.Levels {
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
	switch h.DefaultAction {
	case "", ActionApprove, ActionReject:
	default:
		bad("hil.default_action", "%q must be approve or reject", h.DefaultAction)
	}
}
