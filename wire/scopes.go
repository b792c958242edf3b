package wire

// The API token scopes (SPEC §8), the one list of them: auth checks them,
// the command line's help and the client name them. admin implies every
// other; X:write implies X:read; tasks:read implies metrics.
const (
	ScopeTasksRead     = "tasks:read"
	ScopeTasksWrite    = "tasks:write"
	ScopeTier1Read     = "tier1:read"
	ScopeTier1Write    = "tier1:write"
	ScopeAdmin         = "admin"
	ScopeHILL1         = "hil:l1"
	ScopeHILL2         = "hil:l2"
	ScopeHILL3         = "hil:l3"
	ScopeRegistryWrite = "registry:write"
	ScopeMetrics       = "metrics"
)

// TokenScope is one scope a token can be created with and what it allows.
type TokenScope struct {
	Name   string
	Allows string
}

// TokenScopes lists every scope tokens may be created with, in the order
// help texts show them.
var TokenScopes = []TokenScope{
	{ScopeTasksRead, "get, list and follow tasks; read /metrics"},
	{ScopeTasksWrite, "submit and cancel tasks, give their missing fields (implies tasks:read)"},
	{ScopeTier1Read, "read tier-1 routines and frames, live or stored"},
	{ScopeTier1Write, "ingest tier-1 batches (implies tier1:read)"},
	{ScopeHILL1, "read and decide human-in-the-loop requests at escalation level 1"},
	{ScopeHILL2, "decide them at level 2"},
	{ScopeHILL3, "decide them at level 3"},
	{ScopeRegistryWrite, "register agents when this agent acts as a registry"},
	{ScopeMetrics, "read /metrics only (a Prometheus scraper)"},
	{ScopeAdmin, "everything, including tokens, peers and the database"},
}
