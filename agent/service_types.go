package agent

import "github.com/synapse-edge/synapse/store"

// Types of the store that the agent's methods take or return, named here
// so that the API packages need not import the store.
type (
	// TaskFilter selects the tasks of ListTasks; its After is the page
	// token (a task id) ListTasks returned.
	TaskFilter = store.TaskFilter
	// AuditRecord is one record of the audit chain (AuditLog).
	AuditRecord = store.AuditRecord
)
