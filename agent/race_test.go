//go:build race

package agent_test

// raceEnabled reports whether the race detector is on; it slows the engine
// about fivefold, so the longest tests do less work under it.
const raceEnabled = true
