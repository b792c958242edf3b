package memlimit

import (
	"fmt"
	"runtime/debug"
)

const (
	// DefaultMemoryMB is memory_mb when the file does not set it.
	DefaultMemoryMB = 16
	// MinMemoryMB and MaxMemoryMB bound memory_mb.
	MinMemoryMB = 12
	MaxMemoryMB = 1 << 20
	// frameBatchCost is the read-ahead's unit: a one-frame tier-1 batch
	// waiting for its answer is charged 512 bytes and 1.5 times its size
	// of the in-flight budget (704 bytes for a 128-byte batch), which
	// bounds them too.
	frameBatchCost = 512
	minReadAhead   = 64
	maxReadAhead   = 4096
	// inflightReserve is what the in-flight budget leaves of its eighth
	// of the budget to the memory the agent holds whatever the load (the
	// runtime's tables, the store's buffers): without it, at 16 MiB, the
	// live heap of full-rate one-frame ingest came within a megabyte of
	// the collector's goal, which then ran every few milliseconds (2.4
	// times the CPU per frame; bench/README.md, stop 42).
	inflightReserve = 512 << 10
)

// Config is the "limits" section of the config file.
type Config struct {
	// MemoryMB is the agent's memory budget in MiB (see the package
	// documentation); 0 means DefaultMemoryMB.
	MemoryMB int `json:"memory_mb,omitempty"`
}

// Validate names a bad field.
func (c Config) Validate() error {
	if c.MemoryMB != 0 && (c.MemoryMB < MinMemoryMB || c.MemoryMB > MaxMemoryMB) {
		return fmt.Errorf("limits.memory_mb: %d is out of range: use %d to %d MiB (0 or absent: %d)",
			c.MemoryMB, MinMemoryMB, MaxMemoryMB, DefaultMemoryMB)
	}
	return nil
}

// MB is memory_mb with the default applied.
func (c Config) MB() int {
	if c.MemoryMB == 0 {
		return DefaultMemoryMB
	}
	return c.MemoryMB
}

// Budgets are what a memory budget derives.
type Budgets struct {
	// Total is memory_mb in bytes.
	Total int64
	// SoftLimit is the Go runtime's soft memory limit, in bytes.
	SoftLimit int64
	// Tier1Inflight is the tier-1 in-flight budget, in bytes.
	Tier1Inflight int64
	// Tier1ReadAhead is how many batches of one tier-1 stream may wait
	// for their answers.
	Tier1ReadAhead int
}

// Budgets derives the budgets of c (a valid Config).
func (c Config) Budgets() Budgets {
	total := int64(c.MB()) << 20
	b := Budgets{Total: total, SoftLimit: total, Tier1Inflight: total/8 - inflightReserve}
	b.Tier1ReadAhead = int(min(max(total/8/frameBatchCost, minReadAhead), maxReadAhead))
	return b
}

// Apply sets the runtime's soft memory limit to b.SoftLimit, unless a
// lower one is set already (GOMEMLIMIT, or an agent started before in the
// same process), and returns the function that puts back the limit it
// replaced. The limit is the process's: the command that runs the agent
// applies it, a program that embeds agents decides for itself.
func Apply(b Budgets) (undo func()) {
	prev := debug.SetMemoryLimit(-1) // reads it
	if prev <= b.SoftLimit {
		return func() {}
	}
	debug.SetMemoryLimit(b.SoftLimit)
	return func() { debug.SetMemoryLimit(prev) }
}
