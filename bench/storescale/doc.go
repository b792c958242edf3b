// Package storescale is the harness of a large store (issue #27 item 5,
// issue #28 item 4): it fills a data file with echo tasks through a real
// agent process over HTTP, samples the process's memory
// (/proc/PID/smaps_rollup) while it fills, restarts it and measures the
// start and the memory after it, runs a burst past the retention limit,
// compacts the file with `synapse db compact` and measures it, and times
// concurrent writes with and without a live `db check`. It prints a
// table.
//
// `go test ./bench/storescale` (part of make test) is the short mode: a
// few thousand tasks, with the limits asserted on counts and sizes
// (bytes of file per task, the anonymous memory, the file after the
// burst), never on times. `go test ./bench/storescale -run Scale -v
// -scale.tasks 200000` is the full run whose figures bench/README.md
// quotes.
package storescale
