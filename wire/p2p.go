package wire

// Payloads of the p2p:* messages (seed 004 §6). Field names are the seed's.

// TaskRequestPayload is p2p:task_request.
type TaskRequestPayload struct {
	Task    TaskSpec     `json:"task" msgpack:"task"`
	Context *TaskContext `json:"context,omitempty" msgpack:"context,omitempty"`
}

// TaskSpec is the task inside a request.
type TaskSpec struct {
	ID       string    `json:"id" msgpack:"id"`
	Type     string    `json:"type" msgpack:"type"`
	Priority string    `json:"priority,omitempty" msgpack:"priority,omitempty"`
	Deadline string    `json:"deadline,omitempty" msgpack:"deadline,omitempty"`
	Payload  JSONValue `json:"payload" msgpack:"payload"`
}

// TaskContext links a request to its session and parent.
type TaskContext struct {
	SessionID     string         `json:"session_id,omitempty" msgpack:"session_id,omitempty"`
	ParentTaskID  string         `json:"parent_task_id,omitempty" msgpack:"parent_task_id,omitempty"`
	CorrelationID string         `json:"correlation_id,omitempty" msgpack:"correlation_id,omitempty"`
	Metadata      map[string]any `json:"metadata,omitempty" msgpack:"metadata,omitempty"`
}

// TaskConfirmPayload is p2p:task_confirm.
type TaskConfirmPayload struct {
	TaskID             string          `json:"task_id" msgpack:"task_id"`
	Confirmed          bool            `json:"confirmed" msgpack:"confirmed"`
	EstimatedDuration  int             `json:"estimated_duration,omitempty" msgpack:"estimated_duration,omitempty"`
	ExpectedCompletion string          `json:"expected_completion,omitempty" msgpack:"expected_completion,omitempty"`
	CapabilitiesUsed   []string        `json:"capabilities_used,omitempty" msgpack:"capabilities_used,omitempty"`
	Constraints        *TaskConstraint `json:"constraints,omitempty" msgpack:"constraints,omitempty"`
}

// TaskConstraint is TaskConfirmPayload.constraints.
type TaskConstraint struct {
	MaxRetries      int  `json:"max_retries" msgpack:"max_retries"`
	FallbackEnabled bool `json:"fallback_enabled" msgpack:"fallback_enabled"`
}

// Reason is a coded reason (reject, need human).
type Reason struct {
	Code    ErrorCode `json:"code" msgpack:"code"`
	Message string    `json:"message" msgpack:"message"`
	Details any       `json:"details,omitempty" msgpack:"details,omitempty"`
}

// TaskRejectPayload is p2p:task_reject.
type TaskRejectPayload struct {
	TaskID       string        `json:"task_id" msgpack:"task_id"`
	Reason       Reason        `json:"reason" msgpack:"reason"`
	Alternatives *Alternatives `json:"alternatives,omitempty" msgpack:"alternatives,omitempty"`
}

// Alternatives is TaskRejectPayload.alternatives.
type Alternatives struct {
	SuggestedAgentID string `json:"suggested_agent_id,omitempty" msgpack:"suggested_agent_id,omitempty"`
	RetryAfter       int    `json:"retry_after,omitempty" msgpack:"retry_after,omitempty"`
	PartialSupport   bool   `json:"partial_support" msgpack:"partial_support"`
}

// TaskStatusUpdatePayload is p2p:task_status_update.
type TaskStatusUpdatePayload struct {
	TaskID             string    `json:"task_id" msgpack:"task_id"`
	Status             Status    `json:"status" msgpack:"status"`
	Progress           int       `json:"progress" msgpack:"progress"`
	Message            string    `json:"message,omitempty" msgpack:"message,omitempty"`
	IntermediateResult JSONValue `json:"intermediate_result,omitempty" msgpack:"intermediate_result,omitempty"`
}

// TaskCompletePayload is p2p:task_complete.
type TaskCompletePayload struct {
	TaskID  string     `json:"task_id" msgpack:"task_id"`
	Result  TaskResult `json:"result" msgpack:"result"`
	Summary string     `json:"summary,omitempty" msgpack:"summary,omitempty"`
}

// TaskResult is TaskCompletePayload.result.
type TaskResult struct {
	OutputType string         `json:"output_type" msgpack:"output_type"`
	Output     JSONValue      `json:"output" msgpack:"output"`
	Metadata   map[string]any `json:"metadata,omitempty" msgpack:"metadata,omitempty"`
}

// TaskFailedPayload is p2p:task_failed.
type TaskFailedPayload struct {
	TaskID        string    `json:"task_id" msgpack:"task_id"`
	Error         TaskError `json:"error" msgpack:"error"`
	PartialResult JSONValue `json:"partial_result,omitempty" msgpack:"partial_result,omitempty"`
}

// TaskError is TaskFailedPayload.error.
type TaskError struct {
	Code        ErrorCode `json:"code" msgpack:"code"`
	Message     string    `json:"message" msgpack:"message"`
	Recoverable bool      `json:"recoverable" msgpack:"recoverable"`
	Details     any       `json:"details,omitempty" msgpack:"details,omitempty"`
}

// TaskNeedInfoPayload is p2p:task_need_info.
type TaskNeedInfoPayload struct {
	TaskID        string         `json:"task_id" msgpack:"task_id"`
	MissingFields []MissingField `json:"missing_fields" msgpack:"missing_fields"`
	Question      string         `json:"question,omitempty" msgpack:"question,omitempty"`
	RequiredBy    string         `json:"required_by,omitempty" msgpack:"required_by,omitempty"`
}

// TaskInfoProvidedPayload is p2p:task_info_provided.
type TaskInfoProvidedPayload struct {
	TaskID string    `json:"task_id" msgpack:"task_id"`
	Fields JSONValue `json:"fields" msgpack:"fields"`
}

// TaskCancelPayload is p2p:task_cancel.
type TaskCancelPayload struct {
	TaskID string `json:"task_id" msgpack:"task_id"`
	Reason string `json:"reason,omitempty" msgpack:"reason,omitempty"`
}

// TaskAckPayload is p2p:task_ack.
type TaskAckPayload struct {
	TaskID string `json:"task_id" msgpack:"task_id"`
	// AckedType is the message type acknowledged (p2p:task_complete,
	// p2p:task_cancel, ...).
	AckedType MessageType `json:"acked_type,omitempty" msgpack:"acked_type,omitempty"`
	Status    Status      `json:"status,omitempty" msgpack:"status,omitempty"`
}

// AckPayload is p2p:ack and p2p:nack.
type AckPayload struct {
	MessageID string `json:"message_id" msgpack:"message_id"`
	Error     *Error `json:"error,omitempty" msgpack:"error,omitempty"`
}

// HeartbeatPayload is p2p:heartbeat.
type HeartbeatPayload struct {
	Status      string `json:"status" msgpack:"status"` // online, busy
	ActiveTasks int    `json:"active_tasks" msgpack:"active_tasks"`
	MaxTasks    int    `json:"max_tasks" msgpack:"max_tasks"`
}

// TaskNeedHumanPayload is p2p:task_need_human (seed 004 §6.8).
type TaskNeedHumanPayload struct {
	TaskID          string        `json:"task_id" msgpack:"task_id"`
	Reason          Reason        `json:"reason" msgpack:"reason"`
	Context         *HumanContext `json:"context,omitempty" msgpack:"context,omitempty"`
	Options         []HumanOption `json:"options,omitempty" msgpack:"options,omitempty"`
	EscalationLevel int           `json:"escalation_level" msgpack:"escalation_level"`
	Deadline        string        `json:"deadline,omitempty" msgpack:"deadline,omitempty"`
}

// HumanContext is TaskNeedHumanPayload.context.
type HumanContext struct {
	TaskSummary     string `json:"task_summary,omitempty" msgpack:"task_summary,omitempty"`
	CurrentProgress int    `json:"current_progress" msgpack:"current_progress"`
	BlockedReason   string `json:"blocked_reason,omitempty" msgpack:"blocked_reason,omitempty"`
}

// HumanOption is one option offered to the person.
type HumanOption struct {
	Field      string `json:"field" msgpack:"field"`
	Value      any    `json:"value" msgpack:"value"`
	ProsCons   string `json:"pros_cons,omitempty" msgpack:"pros_cons,omitempty"`
	Confidence int    `json:"confidence,omitempty" msgpack:"confidence,omitempty"`
}

// HumanDecisionPayload is p2p:human_decision (seed 004 §6.9).
type HumanDecisionPayload struct {
	TaskID     string    `json:"task_id" msgpack:"task_id"`
	DecisionID string    `json:"decision_id" msgpack:"decision_id"`
	ReplyTo    string    `json:"reply_to,omitempty" msgpack:"reply_to,omitempty"`
	DecidedBy  DecidedBy `json:"decided_by" msgpack:"decided_by"`
	Decision   Decision  `json:"decision" msgpack:"decision"`
	Notes      string    `json:"notes,omitempty" msgpack:"notes,omitempty"`
	Timestamp  string    `json:"timestamp" msgpack:"timestamp"`
}

// DecidedBy names the person who decided.
type DecidedBy struct {
	UserID   string `json:"user_id" msgpack:"user_id"`
	UserName string `json:"user_name,omitempty" msgpack:"user_name,omitempty"`
	Role     string `json:"role,omitempty" msgpack:"role,omitempty"`
}

// Decision is a person's answer: approve, reject or modify.
type Decision struct {
	Action          string         `json:"action" msgpack:"action"`
	ApprovedFields  map[string]any `json:"approved_fields,omitempty" msgpack:"approved_fields,omitempty"`
	RejectionReason string         `json:"rejection_reason,omitempty" msgpack:"rejection_reason,omitempty"`
}

// TaskOrigin records, on the executing agent, who asked for a task.
type TaskOrigin struct {
	// Peer is the requesting agent's id.
	Peer string `json:"peer" msgpack:"peer"`
	// MessageID is the p2p:task_request's message_id.
	MessageID string `json:"message_id,omitempty" msgpack:"message_id,omitempty"`
}
