package wire

// Report is what a report about a delegated task from the agent executing
// it says, whichever of its types it came as (seed 004 §6: p2p:task_confirm,
// task_reject, task_status_update, task_need_info, task_need_human,
// task_complete, task_failed, and the task_ack of a cancel): the state it
// reports and what goes with that state.
type Report struct {
	TaskID string
	// Status is the state the executing agent reports.
	Status Status
	// Progress (task_status_update), clamped to 0..100.
	Progress      int
	MissingFields []MissingField        // task_need_info
	Human         *TaskNeedHumanPayload // task_need_human
	Result        JSONValue             // task_complete's output
	// Fail is the failure of task_reject and task_failed (Code may be
	// empty).
	Fail *Error
}

// DecodeReport decodes a report of type t. It returns nil and no error for
// a task_ack that acknowledges anything but a cancel (it reports nothing),
// and a message_format_invalid *Error for a payload that does not decode
// or a type that is not a report.
func DecodeReport(t MessageType, p RawPayload) (*Report, error) {
	var r Report
	var err error
	switch t {
	case MsgTaskConfirm:
		var v TaskConfirmPayload
		err = p.Decode(&v)
		r.TaskID, r.Status = v.TaskID, StatusConfirmed
	case MsgTaskReject:
		var v TaskRejectPayload
		err = p.Decode(&v)
		r.TaskID, r.Status = v.TaskID, StatusRejected
		r.Fail = &Error{Code: v.Reason.Code, Message: v.Reason.Message, Retriable: registry[v.Reason.Code].Class == Retriable}
	case MsgTaskStatusUpdate:
		var v TaskStatusUpdatePayload
		err = p.Decode(&v)
		r.TaskID, r.Status, r.Progress = v.TaskID, v.Status, min(max(v.Progress, 0), 100)
	case MsgTaskNeedInfo:
		var v TaskNeedInfoPayload
		err = p.Decode(&v)
		r.TaskID, r.Status, r.MissingFields = v.TaskID, StatusInfoNeeded, v.MissingFields
	case MsgTaskNeedHuman:
		v := new(TaskNeedHumanPayload)
		err = p.Decode(v)
		r.TaskID, r.Status, r.Human = v.TaskID, StatusNeedHuman, v
	case MsgTaskComplete:
		var v TaskCompletePayload
		err = p.Decode(&v)
		r.TaskID, r.Status, r.Result = v.TaskID, StatusCompleted, v.Result.Output
	case MsgTaskFailed:
		var v TaskFailedPayload
		err = p.Decode(&v)
		r.TaskID, r.Status = v.TaskID, StatusFailed
		r.Fail = &Error{Code: v.Error.Code, Message: v.Error.Message, Retriable: v.Error.Recoverable}
	case MsgTaskAck:
		var v TaskAckPayload
		if err = p.Decode(&v); err == nil && v.AckedType != MsgTaskCancel {
			return nil, nil
		}
		r.TaskID, r.Status = v.TaskID, StatusCancelled
	default:
		return nil, Errorf(CodeMessageFormatInvalid, "%s is not a report about a delegated task", t)
	}
	if err != nil {
		return nil, Errorf(CodeMessageFormatInvalid, "%s payload: %v", t, err)
	}
	return &r, nil
}
