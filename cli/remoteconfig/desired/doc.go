// Package desired is the wire format of remote configuration (package
// cli/remoteconfig): the desired document an operator signs and publishes
// for an agent, the signature over it, the operator's keys, and the
// reported document the agent answers with. It does no I/O besides the
// key files, so the agent and the operator's command line share it.
//
// # The desired document
//
// One JSON object of at most MaxDocument bytes, with exactly these
// members (others, or one twice, are refused):
//
//	{"agent_id": "gw-7", "version": 3, "key": "<base64 public key>",
//	 "signature": "<base64 signature>", "config": {...the fragment...}}
//
// version is a whole number from 1 to 2^53-1, greater than the last one
// applied; key is the signing operator key (standard base64 of its 32
// bytes), one of the pinned ones; config is a JSON object: top-level
// config file keys, decoded over the file (an object merges into the
// file's section key by key, an array or a value replaces). The keys of
// cli/config.RemoteLocked may not appear in it.
//
// # The signature input
//
// The signature (standard base64 of 64 bytes) is Ed25519 over the UTF-8
// bytes of
//
//	synapse-config-v1\n<agent_id>\n<version in decimal>\n<hex SHA-256 of config>
//
// where config is the exact bytes of the config member's value as they
// appear in the document, from its '{' to its '}': nothing is re-encoded,
// so any JSON writer can make a document. SignatureInput builds it;
// testdata/vectors.json holds known answers.
//
// # The reported document
//
// A wire envelope (message_type config_reported, receiver "*") signed by
// the agent's key as every envelope is (wire.Sign), whose payload is a
// Report. ParseReport checks one.
package desired
