// Package updatecmd holds the synapse update command: a signed release
// binary, from a file or an http(s) URL, verified against the release
// keys of the agent's config and swapped in beside the previous one
// (internal/selfupdate), and the state of the last update.
package updatecmd
