// Package tier1load generates synapse.telemetry load for an agent's tier-1
// ingest and measures what the agent acknowledges: the batches (devices in
// turn, each with its own seq), the pacing (a rate, a frame count, a
// duration), the two ways of sending (pipelined over the tier-1 WebSocket,
// or POSTed from a few goroutines) and the statistics of the answers. It is
// the engine of `synapse tier1 send`; the command adds flags, the live line
// and the printed summary.
package tier1load
