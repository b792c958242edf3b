package group

import (
	"errors"
	"math"
	"slices"
	"strings"

	"github.com/synapse-edge/synapse/wire"
)

// Role is a member's role in a group.
type Role string

// Roles of members.
const (
	RoleOwner  Role = "owner"
	RoleAdmin  Role = "admin"
	RoleMember Role = "member"
)

// Statuses of a group.
const (
	StatusActive    = "active"
	StatusDisbanded = "disbanded"
)

// Standings: this agent's relation to a group.
const (
	// StandingInvited: invited, not joined yet.
	StandingInvited = "invited"
	// StandingJoining: the join was sent to the owner, who has not
	// confirmed it yet.
	StandingJoining = "joining"
	// StandingMember: a member (the owner is one too).
	StandingMember = "member"
	// StandingFormer: left, removed, or the invitation withdrawn.
	StandingFormer = "former"
)

// Limits.
const (
	MaxMembers     = 256
	MaxOptions     = 32
	maxNameLen     = 256
	maxTextLen     = 4096
	maxIDLen       = 128
	maxWeight      = 1_000_000
	weightUnit     = 1_000_000 // weights are kept in millionths
	defaultWeight  = 1
	maxTaskTimeout = 24 * 3600
)

// Group is a group as one agent knows it. On the owner's agent it is the
// authoritative record; on a member's agent a copy, replaced by the
// owner's announcements.
type Group struct {
	GroupID     string `json:"group_id" msgpack:"group_id"`
	Name        string `json:"name" msgpack:"name"`
	Description string `json:"description,omitempty" msgpack:"description,omitempty"`
	// Owner is the agent that created the group; it coordinates it.
	Owner     string    `json:"owner" msgpack:"owner"`
	Status    string    `json:"status" msgpack:"status"`
	CreatedAt wire.Time `json:"created_at" msgpack:"created_at"`
	// Version grows by one with every change the owner makes to the
	// membership.
	Version     uint64       `json:"version" msgpack:"version"`
	Members     []Member     `json:"members" msgpack:"members"`
	Invitations []Invitation `json:"invitations,omitempty" msgpack:"invitations,omitempty"`
	// Standing is this agent's relation to the group (not part of the
	// owner's announcements).
	Standing  string    `json:"standing,omitempty" msgpack:"standing,omitempty"`
	UpdatedAt wire.Time `json:"updated_at" msgpack:"updated_at"`
}

// Member is one member of a group.
type Member struct {
	AgentID  string    `json:"agent_id" msgpack:"agent_id"`
	Role     Role      `json:"role" msgpack:"role"`
	Weight   float64   `json:"weight" msgpack:"weight"`
	JoinedAt wire.Time `json:"joined_at" msgpack:"joined_at"`
	// TaskTypes are the task types the member declared when it joined;
	// group tasks go to the members that run their type.
	TaskTypes []string `json:"task_types,omitempty" msgpack:"task_types,omitempty"`
}

// Invitation is an invitation not yet answered.
type Invitation struct {
	AgentID   string    `json:"agent_id" msgpack:"agent_id"`
	Role      Role      `json:"role" msgpack:"role"`
	Weight    float64   `json:"weight" msgpack:"weight"`
	InvitedBy string    `json:"invited_by" msgpack:"invited_by"`
	InvitedAt wire.Time `json:"invited_at" msgpack:"invited_at"`
}

// member returns the member with that agent id, or nil.
func (g *Group) member(id string) *Member {
	for i := range g.Members {
		if g.Members[i].AgentID == id {
			return &g.Members[i]
		}
	}
	return nil
}

func (g *Group) invitation(id string) *Invitation {
	for i := range g.Invitations {
		if g.Invitations[i].AgentID == id {
			return &g.Invitations[i]
		}
	}
	return nil
}

// canManage reports whether agent id is the owner or an admin.
func (g *Group) canManage(id string) bool {
	m := g.member(id)
	return m != nil && (m.Role == RoleOwner || m.Role == RoleAdmin)
}

func (g *Group) clone() *Group {
	c := *g
	c.Members = slices.Clone(g.Members)
	for i := range c.Members {
		c.Members[i].TaskTypes = slices.Clone(c.Members[i].TaskTypes)
	}
	c.Invitations = slices.Clone(g.Invitations)
	return &c
}

// snapshot is the record as the owner announces it: without this agent's
// standing and without the invitations (which only the owner keeps).
func (g *Group) snapshot() *Group {
	c := g.clone()
	c.Standing, c.Invitations = "", nil
	return c
}

// Event is one entry of a group's event log.
type Event struct {
	// Seq increases by one per event of the group on this agent.
	Seq     uint64 `json:"seq" msgpack:"seq"`
	EventID string `json:"event_id" msgpack:"event_id"`
	GroupID string `json:"group_id" msgpack:"group_id"`
	// Type is the group:* message type the event is about, or
	// group:create for the creation.
	Type wire.MessageType `json:"type" msgpack:"type"`
	// From is the agent the event comes from (the member who spoke,
	// joined, proposed...).
	From    string         `json:"from" msgpack:"from"`
	At      wire.Time      `json:"at" msgpack:"at"`
	Payload wire.JSONValue `json:"payload" msgpack:"payload"`
}

// EventCreate is the event type of a group's creation.
const EventCreate wire.MessageType = "group:create"

// Message is a broadcast to a group (group:message).
type Message struct {
	MessageID string         `json:"message_id" msgpack:"message_id"`
	GroupID   string         `json:"group_id" msgpack:"group_id"`
	From      string         `json:"from" msgpack:"from"`
	Text      string         `json:"text,omitempty" msgpack:"text,omitempty"`
	Body      wire.JSONValue `json:"body,omitempty" msgpack:"body,omitempty"`
	SentAt    wire.Time      `json:"sent_at" msgpack:"sent_at"`
}

// ---- requests ----

// CreateRequest is the body of POST /group (seed 003 CreateGroupRequest).
type CreateRequest struct {
	Name        string `json:"name" msgpack:"name"`
	Description string `json:"description,omitempty" msgpack:"description,omitempty"`
	// InitialMembers are invited as members with weight 1.
	InitialMembers []string `json:"initial_members,omitempty" msgpack:"initial_members,omitempty"`
	// IdempotencyKey (seed 003 §5.3) is read by the API layers like the
	// Idempotency-Key header; Create ignores it.
	IdempotencyKey string `json:"idempotency_key,omitempty" msgpack:"idempotency_key,omitempty"`
}

// InviteRequest is the body of POST /group/{id}/invite.
type InviteRequest struct {
	AgentID string `json:"agent_id" msgpack:"agent_id"`
	// Role is member (default) or admin.
	Role Role `json:"role,omitempty" msgpack:"role,omitempty"`
	// Weight is the member's weight in weighted votes; default 1.
	Weight float64 `json:"weight,omitempty" msgpack:"weight,omitempty"`
}

// MessageRequest is the body of POST /group/{id}/message: a text, a JSON
// body, or both.
type MessageRequest struct {
	Text string         `json:"text,omitempty" msgpack:"text,omitempty"`
	Body wire.JSONValue `json:"body,omitempty" msgpack:"body,omitempty"`
}

// ---- envelope payloads ----

// memberPayload is the payload of group:invite, group:join, group:leave
// and group:disband, as requests to the owner and as its announcements
// (which carry Group, the owner's record).
type memberPayload struct {
	GroupID   string   `json:"group_id" msgpack:"group_id"`
	AgentID   string   `json:"agent_id,omitempty" msgpack:"agent_id,omitempty"`
	Role      Role     `json:"role,omitempty" msgpack:"role,omitempty"`
	Weight    float64  `json:"weight,omitempty" msgpack:"weight,omitempty"`
	TaskTypes []string `json:"task_types,omitempty" msgpack:"task_types,omitempty"`
	By        string   `json:"by,omitempty" msgpack:"by,omitempty"`
	Group     *Group   `json:"group,omitempty" msgpack:"group,omitempty"`
}

// votePayload is the payload of group:vote_open and group:vote_result.
type votePayload struct {
	Vote *Vote `json:"vote" msgpack:"vote"`
}

// ballotPayload is the payload of group:ballot.
type ballotPayload struct {
	GroupID string `json:"group_id" msgpack:"group_id"`
	VoteID  string `json:"vote_id" msgpack:"vote_id"`
	BallotRequest
}

// taskPayload is the payload of group:task and group:task_result.
type taskPayload struct {
	Task *Task `json:"task" msgpack:"task"`
}

// ---- checks ----

func invalid(field, format string, args ...any) error {
	return wire.Errorf(wire.CodeInvalidParams, format, args...).With("field", field)
}

func checkID(field, id string) error {
	if id == "" || len(id) > maxIDLen || strings.ContainsAny(id, " /\x00") ||
		strings.IndexFunc(id, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
		return invalid(field, "%s must be 1 to %d bytes without spaces, slashes or control characters", field, maxIDLen)
	}
	return nil
}

func checkRole(role Role) (Role, error) {
	switch role {
	case "":
		return RoleMember, nil
	case RoleMember, RoleAdmin:
		return role, nil
	}
	return "", invalid("role", "role must be member or admin (a group has one owner, its creator)")
}

// checkWeight validates a weight and rounds it to millionths; 0 means the
// default.
func checkWeight(w float64) (float64, error) {
	if w == 0 {
		return defaultWeight, nil
	}
	if math.IsNaN(w) || w < 0 || w > maxWeight {
		return 0, invalid("weight", "weight must be more than 0 and at most %d", maxWeight)
	}
	r := math.Round(w*weightUnit) / weightUnit
	if r == 0 {
		return 0, invalid("weight", "weight must be at least 0.000001")
	}
	return r, nil
}

// units is a weight in millionths, for exact sums.
func units(w float64) int64 { return int64(math.Round(w * weightUnit)) }

func notFound(what, id string) error {
	return wire.Errorf(wire.CodeNotFound, "no %s %q", what, id).With(what+"_id", id)
}

// isNotFound reports whether err is the not_found error of a missing
// record.
func isNotFound(err error) bool {
	var we *wire.Error
	return errors.As(err, &we) && we.Code == wire.CodeNotFound
}

func denied(format string, args ...any) error {
	return wire.Errorf(wire.CodePermissionDenied, format, args...)
}

func conflict(reason, format string, args ...any) error {
	return wire.Errorf(wire.CodeInvalidStateChange, format, args...).With("reason", reason)
}
