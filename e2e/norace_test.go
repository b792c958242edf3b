//go:build !race

package e2e_test

// raceTest reports whether this test binary runs under the race detector
// (make test's race suite), where long load tests use smaller defaults.
const raceTest = false
