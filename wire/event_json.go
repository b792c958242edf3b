package wire

import (
	"encoding/json"
	"strconv"
)

// The data of a task's stream events (SPEC §5.2) as the engine writes
// them: structs rather than maps, their fields in the order of the keys
// encoding/json writes for a map, so the JSON is what it was;
// EventDataJSON writes the common ones without reflection (the same bytes
// as json.Marshal, event_json_test.go).
// StatusEventData is a status event's data.
type StatusEventData struct {
	From     Status `json:"from"`
	Message  string `json:"message"`
	Progress int    `json:"progress"`
	Status   Status `json:"status"`
	TaskID   string `json:"task_id"`
}

// ErrorEventData is an error event's data; NumericCode is Code's numeric
// code of seed 000 (2004), if it has one.
type ErrorEventData struct {
	Code        ErrorCode `json:"code"`
	Message     string    `json:"message"`
	NumericCode int       `json:"numeric_code,omitempty"`
	Recoverable bool      `json:"recoverable"`
	TaskID      string    `json:"task_id"`
}

// ProgressEventData is a progress event's data.
type ProgressEventData struct {
	Message  string `json:"message"`
	Progress int    `json:"progress"`
	TaskID   string `json:"task_id"`
}

// LogEventData is a log event's data.
type LogEventData struct {
	Line   string `json:"line"`
	TaskID string `json:"task_id"`
}

// EventDataJSON encodes an event's data.
func EventDataJSON(data any) ([]byte, error) {
	switch d := data.(type) {
	case *StatusEventData:
		return StatusEventJSON(d), nil
	case *ErrorEventData:
		return ErrorEventJSON(d), nil
	case *ProgressEventData:
		b := make([]byte, 0, 64+len(d.Message)+len(d.TaskID))
		b = append(b, `{"message":`...)
		b = AppendJSONString(b, d.Message, true)
		b = append(b, `,"progress":`...)
		b = strconv.AppendInt(b, int64(d.Progress), 10)
		b = append(b, `,"task_id":`...)
		b = AppendJSONString(b, d.TaskID, true)
		return append(b, '}'), nil
	case *LogEventData:
		b := make([]byte, 0, 32+len(d.Line)+len(d.TaskID))
		b = append(b, `{"line":`...)
		b = AppendJSONString(b, d.Line, true)
		b = append(b, `,"task_id":`...)
		b = AppendJSONString(b, d.TaskID, true)
		return append(b, '}'), nil
	case *TaskStatusResponse:
		return AppendStatusJSON(nil, d, true)
	}
	return json.Marshal(data)
}

// StatusEventJSON is the JSON of d.
func StatusEventJSON(d *StatusEventData) []byte {
	return AppendStatusEventJSON(make([]byte, 0, 96+len(d.Message)+len(d.TaskID)), d)
}

// AppendStatusEventJSON appends the JSON of d to b.
func AppendStatusEventJSON(b []byte, d *StatusEventData) []byte {
	b = append(b, `{"from":`...)
	b = AppendJSONString(b, string(d.From), true)
	b = append(b, `,"message":`...)
	b = AppendJSONString(b, d.Message, true)
	b = append(b, `,"progress":`...)
	b = strconv.AppendInt(b, int64(d.Progress), 10)
	b = append(b, `,"status":`...)
	b = AppendJSONString(b, string(d.Status), true)
	b = append(b, `,"task_id":`...)
	b = AppendJSONString(b, d.TaskID, true)
	return append(b, '}')
}

// ErrorEventJSON is the JSON of d.
func ErrorEventJSON(d *ErrorEventData) []byte {
	b := make([]byte, 0, 96+len(d.Message)+len(d.TaskID))
	b = append(b, `{"code":`...)
	b = AppendJSONString(b, string(d.Code), true)
	b = append(b, `,"message":`...)
	b = AppendJSONString(b, d.Message, true)
	if d.NumericCode != 0 {
		b = append(b, `,"numeric_code":`...)
		b = strconv.AppendInt(b, int64(d.NumericCode), 10)
	}
	b = append(b, `,"recoverable":`...)
	b = strconv.AppendBool(b, d.Recoverable)
	b = append(b, `,"task_id":`...)
	b = AppendJSONString(b, d.TaskID, true)
	return append(b, '}')
}
