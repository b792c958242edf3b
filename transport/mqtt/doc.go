// Package mqtt connects an agent to an MQTT broker (mosquitto, EMQX,
// HiveMQ, VerneMQ, AWS IoT Core, Azure IoT Hub, ...), for agents behind
// NAT, firewalls and cellular links that can reach a broker but accept no
// connection.
//
// # The connection
//
// MQTT 3.1.1 (the version every broker speaks) through the Eclipse Paho
// client, over TCP (mqtt://host:1883) or TLS (mqtts://host:8883, with an
// optional CA and client certificate), with a user name and password when
// the broker wants them. The session is persistent (clean session off):
// the broker keeps this client_id's subscriptions and QoS 1 messages while
// it is away. Everything is QoS 1. The client reconnects by itself with
// back-off (1 s doubling to Options.MaxReconnectInterval, with jitter for
// the first connection), and makes its subscriptions again on every
// connection, because a broker restarted without persistence (mosquitto's
// default) has forgotten them; a subscription the broker refuses (SUBACK
// 0x80, which the client library reports as granted) is asked for again
// until granted, and only then is the client up. Options.URLs names more
// nodes of a clustered broker, tried in turn when the one in use is gone.
// A message that arrives is acknowledged to the broker (PUBACK) only once
// its handler returned, so one taken while the agent dies is delivered
// again.
//
// # Topics
//
// Under a prefix (Options.TopicPrefix, default "synapse"):
//
//	{prefix}/{system_id}/{agent_id}/tier1/{capability_id}   stored tier-1 batches (northbound)
//	{prefix}/{system_id}/{agent_id}/events                  task status changes as JSON, when
//	                                                        configured (events.go)
//	{prefix}/agents/{agent_id}/inbox                        envelopes for the agent, and the
//	                                                        answers to those it sent (p2p.go)
//	{prefix}/agents/{agent_id}/card                         its presence card, retained; the
//	                                                        Last Will turns it offline (presence.go)
//	{prefix}/agents/+/card                                  read by a Directory: the agents on the
//	                                                        broker, signatures checked (directory.go)
//	{prefix}/agents/{agent_id}/config/desired               a signed config fragment for the agent,
//	                                                        retained (package cli/remoteconfig)
//	{prefix}/agents/{agent_id}/config/reported              the agent's signed answer, retained
//
// Every level that comes from an id is checked: a '/', '+', '#' or NUL in
// it would address another topic, and is refused.
//
// # Envelopes between agents
//
// A peer's endpoint mqtt://[broker]/{agent_id} names an agent on the same
// broker. The outbox's envelopes for it go, in request frames (frame.go:
// the envelope with the few headers HTTP would carry), to its inbox; it
// answers in an answer frame on this agent's inbox once the envelope's
// effects are on its disk, and that answer is the outcome. The broker's
// PUBACK is not delivery: see p2p.go.
//
// # Northbound tier-1
//
// Transport is the MQTT wire of the transport seam (package transport):
// the command adds it to the agent's transport.Mux for mqtt and mqtts
// destinations. With "uplink": {"endpoint": "mqtt://"} the agent's tier-1
// uplink (tier1.Uplink, the durable queue the ingest fills in the
// transaction that stores a batch) sends each batch through it as a Batch
// message: the payload is the queued batch's exact msgpack bytes, the
// tier-1 batch of tier1/doc.go,
//
//	[capability_id str, version str, [frame, ...], batch_id str]
//
// where each frame is an array of the routine's field values in
// descriptor order, and batch_id is "u<n>", n counting up from 1 per agent
// in the order batches were stored. The outcome is Delivered at the
// broker's PUBACK, and only then does the batch leave the queue; one whose
// PUBACK was lost goes out again. The uplink keeps a window of batches in
// flight (Transport.SendMany: published in order from the one client, so
// the broker forwards them in order); after a failure in the window the
// rest goes again too. A consumer therefore sees each batch at
// least once, in order of first arrival, deduplicates on (the topic's
// agent_id, batch_id), and can see a gap in n. The broker's PUBACK is the
// end of the agent's responsibility: a broker that restarts without
// persistence loses what it held for consumers, and what is published
// while no consumer is subscribed reaches no one (MQTT has no history);
// run it with persistence and keep consumers' sessions persistent.
//
// # Southbound tier-1
//
// The wire only delivers device messages: AddSubscription subscribes a
// topic filter with a handler that acknowledges each message itself
// (Client.SubscribeAck), on every connection. The southbound bridge
// (package tier1/southbound: the routes and their small expression
// language, the batch_id derived from topic and payload) is one such
// handler: it maps each message onto a one-frame batch and stores it
// through the tier-1 ingest, acknowledging (PUBACK) once the batch is
// fsynced, in arrival order, so the broker delivers again what the agent
// took but did not store, and the batch_id makes that redelivery a
// duplicate.
package mqtt
