package api

// Task lifecycle hooks, the values of TaskLifecycle.Hook.
const (
	TaskLifecycleHookPrestart  = "prestart"
	TaskLifecycleHookPoststart = "poststart"
	TaskLifecycleHookPoststop  = "poststop"
)

// TaskLifecycle is a task's `lifecycle` block, upstream's wire shape: Hook
// is prestart, poststart or poststop; Sidecar keeps the task running
// beside the group's main tasks instead of running it once to completion.
type TaskLifecycle struct {
	Hook    string `hcl:"hook,optional"`
	Sidecar bool   `hcl:"sidecar,optional"`
}

// Empty reports whether l says nothing: no block, or one with neither
// field set. Such a task is a main task.
func (l *TaskLifecycle) Empty() bool { return l == nil || (l.Hook == "" && !l.Sidecar) }
