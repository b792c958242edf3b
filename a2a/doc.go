// Package a2a holds the types of the Agent2Agent (A2A) protocol's JSON-RPC
// 2.0 binding and their mapping onto this agent's tasks.
//
// # Versions
//
// Two versions of the method names and object shapes are served on one
// endpoint. The A2A v1.0 names (SendMessage, SendStreamingMessage,
// SubscribeToTask, GetTask, ListTasks, CancelTask and
// Create/Get/List/DeleteTaskPushNotificationConfig) answer in v1.0 shapes:
// states as TASK_STATE_*, roles as ROLE_*, parts without a kind, send and
// stream results wrapped as {"task"}, {"statusUpdate"} or
// {"artifactUpdate"}. The v0.3 names (message/send, message/stream,
// tasks/get, tasks/cancel, tasks/resubscribe,
// tasks/pushNotificationConfig/set|get|list|delete) answer in v0.3 shapes:
// lower-case states, every object with its "kind". Requests are read in
// either shape.
//
// # Mapping
//
// A message becomes a task payload: the first data part's object, with the
// text parts joined by newlines under "text" (a message of text parts only
// becomes {"text": ...}). File parts are refused with ContentTypeNotSupported.
// The task type is the message metadata "task_type", default "echo"; a type
// with no handler is refused with UnsupportedOperation. A task's context id
// is its task id: this agent keeps no conversations. A task's result is one
// artifact, "result", with one data part (a result that is not an object is
// wrapped as {"value": ...}).
//
// States map as: idle, pending, confirmed → submitted; executing,
// info_provided, human_approved, human_rejected → working; info_needed,
// need_human, human_deciding → input-required; completed, failed,
// cancelled (canceled), rejected → themselves. No state of ours maps to
// auth-required.
//
// # Errors
//
// The A2A codes (-32001 task not found … -32005 content type, -31401
// unauthenticated, -31403 unauthorized) and the JSON-RPC ones (-32600 …
// -32603) come from this agent's errors by code (see ErrorFrom). Error data is
// a list of typed details in both versions, as the reference SDKs send and
// read it (see RPCError.WithDetails): the agent's TPError as a
// google.protobuf.Struct and a google.rpc.ErrorInfo with the A2A reason
// (TASK_NOT_FOUND, …).
package a2a
