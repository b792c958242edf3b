// Package remoteconfig applies configuration sent through the MQTT
// broker: a desired document, retained on
// {prefix}/agents/{agent_id}/config/desired, carries a config fragment
// and its version, signed with Ed25519 by one of the operator keys the
// agent's config file pins (remote_config.operator_keys). The agent
// checks it, decodes the fragment over its config file and applies the
// whole as a reload does (cli/reload: the same checks and live fields),
// keeps the document in its data directory so that it is in force after a
// restart, and answers on .../config/reported, retained, signed by its own
// key.
//
// The documents, the signature input and the reasons of a refusal are in
// package desired.
package remoteconfig
