// Package agent is a Synapse agent: identity, capabilities, the task engine
// with its state machine, handlers and tokens. It knows nothing of HTTP; the
// httpapi package serves it.
//
// # Lifecycle
//
//	a, err := agent.New(cfg, agent.WithLogger(log))
//	a.Handle(agent.Handler{Type: wire.SupportedTaskType{Type: "resize"}, Func: resize})
//	err = a.Open(ctx)   // store, identity, recovery of unfinished tasks
//	defer a.Close(ctx)  // running tasks get until ctx is done
//
// # Tasks
//
// Submit validates the payload against the handler's input schema (missing
// required fields park the task in info_needed), takes one of
// max_concurrent_tasks slots (or fails with rate_limited, numeric code 4004,
// storing nothing), and stores the task in confirmed before returning. Every
// later transition follows the table in state.go and is persisted before its
// events are published to subscribers, so what a client hears of is always
// on disk.
//
// Finished tasks live only in the store; the engine keeps in memory just the
// tasks that are not final. Retention deletes finished tasks by age and
// count.
//
// # Restart
//
// On Open, tasks a previous process left executing fail with
// agent_restarted (recoverable), or run again when their handler is
// idempotent; accepted tasks that had not started run; tasks waiting for
// information keep waiting.
package agent
