// Package wire holds everything that crosses the boundary of an agent: the
// task and envelope types, their JSON and msgpack codecs, signatures, and the
// single registry of client-visible errors.
//
// # Codecs
//
// JSON is the default; msgpack uses the same field names (struct tags carry
// both). Untrusted msgpack is walked by [CheckMsgpack] before it is decoded,
// so a body that declares more elements than it has bytes is refused before
// anything is allocated for it.
//
// # Errors
//
// Every error an agent shows a client is an [*Error] whose code is listed in
// the registry (errors.go) with its HTTP status, class and default message.
// Handlers return errors; one adapter in httpapi writes them.
//
// # Package ownership
//
// Only this package imports the msgpack library.
package wire
