package agent

import (
	"strings"

	"github.com/synapse-edge/synapse/wire"
)

// Page sizes of TaskPage.
const (
	DefaultTaskPageSize = 50
	MaxTaskPageSize     = 500
)

// TaskFilter selects the tasks of ListTasks.
type TaskFilter struct {
	Status   wire.Status
	TaskType string
	// After is the page token ListTasks returned (a task id); tasks are
	// listed newest first.
	After string
	Limit int
	// NonTerminal keeps only tasks that have not reached a final state.
	NonTerminal bool
}

// TaskPageQuery asks for one page of the task list, as every API does.
type TaskPageQuery struct {
	// Status, when not empty, keeps the tasks in that state.
	Status wire.Status
	// TaskType, when not empty, keeps the tasks of that type.
	TaskType string
	// PageToken is the NextPageToken of the page before; empty for the first.
	PageToken string
	// PageSize is 1 to MaxTaskPageSize; 0 is DefaultTaskPageSize.
	PageSize int
}

// TaskPage lists tasks newest first, one page at a time, as status
// answers without payload, result or history. A page size out of range
// or a status that is not a task state is invalid_params naming the field.
func (a *Agent) TaskPage(q TaskPageQuery) (*wire.TaskList, error) {
	if q.PageSize == 0 {
		q.PageSize = DefaultTaskPageSize
	}
	if q.PageSize < 1 || q.PageSize > MaxTaskPageSize {
		return nil, wire.Errorf(wire.CodeInvalidParams, "page_size must be a whole number from 1 to %d", MaxTaskPageSize).With("field", "page_size")
	}
	if q.Status != "" && !q.Status.Valid() {
		return nil, wire.Errorf(wire.CodeInvalidParams, "status %q is not a task state; the states are %s", q.Status, statesText()).With("field", "status")
	}
	tasks, next, err := a.ListTasks(TaskFilter{Status: q.Status, TaskType: q.TaskType, After: q.PageToken, Limit: q.PageSize})
	if err != nil {
		return nil, wire.Errorf(wire.CodeSysStorage, "list tasks: %v", err)
	}
	out := &wire.TaskList{Tasks: make([]*wire.TaskStatusResponse, 0, len(tasks)), NextPageToken: next}
	for _, t := range tasks {
		out.Tasks = append(out.Tasks, t.StatusResponse(false))
	}
	return out, nil
}

// statesText lists the task states, comma separated.
func statesText() string {
	names := make([]string, len(wire.AllStatuses))
	for i, st := range wire.AllStatuses {
		names[i] = string(st)
	}
	return strings.Join(names, ", ")
}
