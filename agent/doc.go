// Package agent is a Synapse agent's task engine: its identity, its tokens
// (package auth keeps them), its capabilities, the tasks with their state
// machine, the handlers that run them (package handlers makes the built-in
// and configured ones), human requests and retention. It serves no protocol; httpapi (and grpcapi)
// serve it, and package peer attaches the peer network to it.
//
// # Lifecycle
//
//	wires := netwire.New(netwire.Options{Guard: pol.DialContext}) // HTTP and WebSocket; pol from package transport/outbound
//	t1, err := tier1.NewService(t1cfg, tier1.ServiceOptions{SeenFor: agent.IdempotencyTTL}) // optional: tier 1
//	a, err := agent.New(cfg, agent.Options{Logger: log, Transport: wires, Outbound: pol, Tier1: t1})
//	a.Handle(agent.Handler{Type: wire.SupportedTaskType{Type: "resize"}, Func: resize})
//	err = handlers.Register(a, handlers.Options{}) // optional: echo, sleep, confirm, natural_language
//	n, err := peer.New(a, peer.Options{Logger: log}) // optional: the peer network
//	err = a.Open(ctx)   // store, identity, tier 1's ingestor, the network's state, recovery of unfinished tasks
//	defer a.Close(ctx)  // running tasks get until ctx is done
//
// The agent sends through the transport.Transport it is given and imports
// no wire: the command (package cli's serve) builds the network wires
// (package transport/netwire) and adds MQTT and A2A to them by scheme
// (AddWire). An agent given none runs its local tasks, and a send is
// refused with an error that names the scheme.
//
// Tier 1 is the command's too, and the agent imports no package of it:
// serve builds package tier1's Service from the config file's tier1
// section and passes it in Options.Tier1, through the Tier1 interface
// (tier1.go). The agent opens it over its store, prunes it with its own
// retention (batch ids as long as idempotency keys) and offers its
// routines in negotiations (Responder); the layers that ingest and read
// frames (httpapi, the MQTT southbound, the exports) get its ingestor
// from the command.
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
// # The network hook
//
// The engine knows peers only through the Network interface (network.go),
// which package peer implements and attaches with Attach. A delegated task
// (one with a target) and a task a peer asked for (one with an origin) are
// tasks like any other. Every change of a task reaches Network.Changed
// inside the store transaction of the change, where the network queues
// what it announces (the p2p:* messages a peer must hear of, the webhook
// callback of a final task); a task with A2A push configs also reaches
// Network.Push, which renders and queues its notifications; what the
// engine sends explicitly (a cancel, information or a decision for the
// executing peer) is an Outgoing it hands to Network.Enqueue in the same
// transaction. So a crash loses neither the change nor its messages. The network hands the messages of
// paired peers back through the methods on behalf of a peer
// (AcceptFromPeer, ReportFromPeer, CancelFromPeer, InfoFromPeer,
// DecisionFromPeer). Without a network, a target, a callback_url or an A2A
// push config is refused.
//
// # Restart
//
// On Open, tasks a previous process left executing fail with
// agent_restarted (recoverable), or run again when their handler is
// idempotent; accepted tasks that had not started run; tasks waiting for
// information keep waiting.
package agent
