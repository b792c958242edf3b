package wire

import (
	"encoding/json"
	"unicode/utf8"
)

// MsgSynapseMessage is one message of seed 003's SendMessage between
// agents: the envelope a SendMessageRequest asks for, its payload a
// MessagePayload. A receiver checks it and shows it on its message feed
// (GET /messages/callback).
const MsgSynapseMessage MessageType = "synapse:message"

// The content types of seed 003 §4.2's messages.
const (
	MessageText = "text"
	MessageJSON = "json"
	MessageCode = "code"
	MessageFile = "file"
)

// SendMessageRequest is seed 003 §4.2's SendMessageRequest: this agent is
// asked to send the paired peer receiver_id a message, signed as its own.
// payload_json is JSON text (for text, a JSON string).
type SendMessageRequest struct {
	ReceiverID     string `json:"receiver_id" msgpack:"receiver_id"`
	ContentType    string `json:"content_type" msgpack:"content_type"`
	PayloadJSON    string `json:"payload_json" msgpack:"payload_json"`
	CorrelationID  string `json:"correlation_id,omitempty" msgpack:"correlation_id,omitempty"`
	ConversationID string `json:"conversation_id,omitempty" msgpack:"conversation_id,omitempty"`
}

// SendMessageResponse answers it: the message_id of the envelope, and its
// status, queued (durable in the outbox, delivered in order with retries).
type SendMessageResponse struct {
	MessageID string `json:"message_id" msgpack:"message_id"`
	Status    string `json:"status" msgpack:"status"`
}

// MessageQueued is the status of a SendMessageResponse.
const MessageQueued = "queued"

// MessagePayload is the payload of a synapse:message envelope; the
// envelope's correlation_id is the request's.
type MessagePayload struct {
	ContentType    string    `json:"content_type" msgpack:"content_type"`
	Payload        JSONValue `json:"payload" msgpack:"payload"`
	ConversationID string    `json:"conversation_id,omitempty" msgpack:"conversation_id,omitempty"`
}

// Message checks r and returns the payload of the envelope it asks for;
// the error names the bad field (invalid_params).
func (r *SendMessageRequest) Message() (*MessagePayload, error) {
	bad := func(field, format string, args ...any) error {
		return Errorf(CodeInvalidParams, format, args...).With("field", field)
	}
	switch {
	case r.ReceiverID == "":
		return nil, bad("receiver_id", "receiver_id is required: the agent_id of a paired peer")
	case !messageContentType(r.ContentType):
		return nil, bad("content_type", "content_type %q is not one of text, json, code, file", r.ContentType)
	case r.PayloadJSON == "":
		return nil, bad("payload_json", "payload_json is required (JSON text; a JSON string for text)")
	case !utf8.ValidString(r.PayloadJSON) || !json.Valid([]byte(r.PayloadJSON)):
		return nil, bad("payload_json", "payload_json is not JSON text")
	}
	// As a task's payload: a peer may want it as msgpack.
	if err := CheckJSON([]byte(r.PayloadJSON)); err != nil {
		return nil, bad("payload_json", "payload_json: %v", err)
	}
	return &MessagePayload{ContentType: r.ContentType, Payload: JSONValue(r.PayloadJSON), ConversationID: r.ConversationID}, nil
}

// Check reports what is wrong with a received message's payload.
func (p *MessagePayload) Check() error {
	if !messageContentType(p.ContentType) {
		return Errorf(CodeMessageFormatInvalid, "content_type %q is not one of text, json, code, file", p.ContentType).With("field", "content_type")
	}
	if len(p.Payload) == 0 {
		return Errorf(CodeMessageFormatInvalid, "payload is missing").With("field", "payload")
	}
	return nil
}

func messageContentType(ct string) bool {
	switch ct {
	case MessageText, MessageJSON, MessageCode, MessageFile:
		return true
	}
	return false
}
