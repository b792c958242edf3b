package wire

// StreamChunk is one streamed partial result of a task (seed 000 §2.2,
// SupportStreaming; the seed names the type and gives no fields). A handler
// emits chunks with agent.Run.Chunk; each is a task event of type log whose
// data is the chunk, so it reaches SSE (event: log) and gRPC
// StreamTaskStatus, and Last-Event-ID replay, like any other event; a log
// line is told apart by its "line" field.
type StreamChunk struct {
	// TaskID is the task the chunk belongs to.
	TaskID string `json:"task_id" msgpack:"task_id"`
	// Seq numbers the task's chunks from 1, in the order they were emitted.
	Seq int `json:"seq" msgpack:"seq"`
	// Data is the partial result: any JSON value.
	Data JSONValue `json:"data" msgpack:"data"`
	// Final marks the last chunk the handler emits.
	Final bool `json:"final,omitempty" msgpack:"final,omitempty"`
}
