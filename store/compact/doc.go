// Package compact rewrites a stopped agent's data file into a new file
// that holds the same records in as few pages as they need, and puts it
// in the old one's place (`synapse db compact`). bbolt reuses the pages
// it frees but never gives them back: after a burst past the retention
// limit the file keeps its peak size. A compaction brings it back to
// what its records take.
//
// It is safe to interrupt at any point (kill -9, a power cut): the copy
// is written to a temporary file beside the data file, synced, and
// renamed over it, and the directory is synced; until the rename the
// old file is whole and the temporary one is removed by the next
// compaction, after it the new file is whole. The commit log is replayed
// and checkpointed into the file before the copy (the store's own Open
// and Close), so the copy holds everything and names the same last log
// record.
package compact
