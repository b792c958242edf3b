// Package remoteupdate takes update commands from the broker: a retained
// document on {prefix}/agents/{agent_id}/update/desired, signed (Ed25519)
// by an operator key of the config (update.operator_keys), naming a
// release's URL, SHA-256 and minisign signature. A newer one is
// installed as synapse update installs (internal/selfupdate: the release
// key checks the binary, the operator key the command) and the agent
// restarts into it; every step is reported, retained and signed by the
// agent's key, on .../update/reported (README: Updating).
package remoteupdate
