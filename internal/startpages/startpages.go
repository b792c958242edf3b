// Package startpages lets a long-running process give back the pages of
// its own executable that only its start touched.
//
// A Go program's start (the runtime's set-up, the initialisation of every
// package, the agent opening its store and starting its servers) runs
// code and reads tables from all over the binary, and Linux maps file
// pages around every fault (fault-around, 64 KiB and more with large
// folios), so after start almost the whole binary is resident in the
// process (issue 13: 10 MB of the idle agent's 11.7 MB RSS were pages of
// the binary) although an idle agent runs a small part of it. Release
// drops the process's mappings of those pages (madvise MADV_DONTNEED on
// the executable's read-only segments); the pages stay in the page cache,
// and what the process runs afterwards is mapped again by the next fault
// (a minor fault: no disk read, no copy). The working set is then what
// the process uses, not what its start touched.
package startpages

// Release unmaps the read-only pages of the executable (Linux; elsewhere
// it does nothing) and returns the bytes of address space it covered.
// Call it once, when start-up is over.
func Release() (int64, error) { return release() }
