// Package memlimit is the agent's memory budget: the "limits" section of
// the config file (limits.memory_mb), what it derives, and the trimmer
// that gives memory back once the work is done.
//
// # The budget
//
// memory_mb (default 16) is the memory the agent may take for its work:
// its anonymous memory (heap, stacks, the runtime's tables), what a
// device pays for and cannot get back without the agent. The pages of
// the binary itself come on top (on amd64 9 to 12 MiB resident under
// full-rate ingest, nearly the whole file); they are clean pages of a
// file, shared and dropped by the kernel under pressure. From the budget
// come:
//
//   - the Go runtime's soft limit (runtime/debug.SetMemoryLimit):
//     memory_mb itself. Near it the collector runs more often rather than
//     let the heap grow. It is a backstop, not the working point: the
//     budgets below keep the live heap of full-rate ingest at about half
//     of it, because a live heap close to the limit makes the collector
//     run without end (measured: a 12 MiB limit with read-ahead 4,096 and
//     a 4 MiB in-flight budget cost 5 to 6 times the CPU per frame);
//   - the tier-1 in-flight budget (tier1.max_inflight_bytes when the file
//     does not set it): memory_mb/8 less 512 KiB (1.5 MiB at 16 MiB; the
//     512 KiB keep the live heap off the collector's goal, where at 2 MiB
//     it cost half the one-frame rate), the decoded batches waiting for the
//     disk, each counted at what it holds decoded (a one-frame batch 704
//     bytes, a batch of many 100-byte frames about 5.5 times its size);
//   - the tier-1 read-ahead of a WebSocket stream: how many batches may
//     wait for their answers before the server stops reading the
//     connection, memory_mb/8 over 512 bytes, between 64 and 4,096: 4,096
//     at 16 MiB, as before the budget (the in-flight budget then bounds
//     one-frame batches to about 2,200). Fewer cost
//     throughput where the disk is slow to sync: what one commit holds is
//     what was read ahead while the one before was on its way to the disk.
//
// # Giving memory back
//
// The runtime returns freed memory to the system slowly (its background
// scavenger), so after a burst of work an agent holds the heap the burst
// grew. The Trimmer watches how much the agent allocates (a counter of
// the runtime, read every 2 s); after 3 quiet checks in a row it collects
// and returns every free page at once (runtime/debug.FreeOSMemory), once,
// until work resumes. It costs nothing on the hot paths: it reads a
// counter while the agent works and acts only when it does not.
package memlimit
