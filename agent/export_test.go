package agent

// SetAfterDelegate makes f run between the commit of each delegated task
// (which sends its request) and the task becoming live; nil removes it.
func SetAfterDelegate(f func(taskID string)) {
	if f == nil {
		afterDelegate.Store(nil)
		return
	}
	afterDelegate.Store(&f)
}
