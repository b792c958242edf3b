// Package taskpeek reads the status of a task from its stored JSON
// without decoding the rest: the agent's start looks at every task
// record to find the unfinished ones (SPEC §5.5), and a full decode of
// each made a restart of a store of 200k tasks take many seconds.
//
// Status answers only when the answer is certain: the first key
// "status" at the top level of an object whose earlier members hold no
// nested object or array (the store's encoder, wire.AppendTaskJSON,
// writes task_id, task_type, then status), whose value is a state's
// name. Anything else is not ok, and the caller decodes the record as
// before.
package taskpeek
