// Package a2aclient delivers a peer's messages over A2A (the a2a_jsonrpc
// transport a contract can select, seed 002): it implements
// transport.Transport for envelopes whose destination is an A2A JSON-RPC
// endpoint, written with the scheme a2a+http or a2a+https
// (a2a+https://peer.example/a2a), and speaks A2A v1.0 there, so the peer
// may be another Synapse agent or any A2A server (a2a-go's, the JS SDK's).
//
// # What is sent
//
// The envelope (signed, not sealed: A2A carries no contract encryption,
// an encrypted payload is refused as Permanent) is mapped by type:
//
//   - p2p:task_request: SendMessage of one user message whose metadata
//     task_type is the task's type and whose one data part is its payload
//     (what Synapse's own A2A binding reads back), with returnImmediately:
//     the answer names the remote task. A payload that is no JSON object
//     is sent as {"value": payload}.
//   - p2p:task_cancel: CancelTask of the remote task; Retry while the
//     task's request has not been sent (the outbox may send a window of
//     messages at once), nothing once its tracking ended (the local task
//     is final then, which the store still says after a restart).
//   - p2p:task_info_provided: SendMessage to the remote task (taskId) with
//     the fields as its data part.
//   - p2p:task_ack: nothing to send (A2A has no acknowledgements).
//
// Any other type is Permanent: it has no A2A counterpart.
//
// # How results come back
//
// A2A servers do not send envelopes back. Once a SendMessage is answered
// with a task, the pair (local task, remote task) is written to the
// agent's store (a2a.RemoteTask, through the Ledger Start is given)
// before Send reports the delivery, and a tracker
// follows the remote task until it is final: by subscription
// (SubscribeToTask, server-sent events; its task, statusUpdate and
// artifactUpdate events, or v0.3's kinds), reading it (GetTask) again
// whenever a stream ends early, and by polling GetTask (backing off from
// PollMin to PollMax) a server that answers the subscription with an
// error or no event stream. Each change of its A2A state is given to the Reporter as the
// report the peer would have sent (p2p:task_confirm, task_status_update,
// task_need_info, task_complete with the result artifact's data,
// task_failed, task_reject, a task_ack of the cancel), so the local task
// moves exactly as for a native peer. The record is deleted after the
// final report; Start resumes tracking every record after a restart.
//
// Delivery is at least once, like the outbox's: a SendMessage whose
// answer is lost (or a crash before its record is written) is sent again
// by the outbox. It carries the envelope's message_id as its messageId and
// as an Idempotency-Key header: a Synapse peer answers the resend with the
// same task (its A2A binding keeps idempotency keys as every route does);
// an A2A server that ignores the header runs the task twice. A
// task_request for a task that already has a record is not sent again.
//
// # Errors
//
// An HTTP refusal is classified by transport.Classify, with the TPError
// Synapse puts in a JSON-RPC error's data when there is one. A JSON-RPC
// error in a 200 answer is classified by its code: invalid params,
// method or task not found, unsupported operation or content type are
// Permanent, a rate limit (RATE_LIMITED) and internal errors Retry,
// -31401 (unauthenticated) Retry as Unreached.
package a2aclient
