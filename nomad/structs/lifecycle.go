package structs

import "fmt"

// Task lifecycle hooks, upstream's values for `lifecycle { hook }`.
const (
	TaskLifecycleHookPrestart  = "prestart"
	TaskLifecycleHookPoststart = "poststart"
	TaskLifecycleHookPoststop  = "poststop"
)

// TaskLifecycleConfig is a task's `lifecycle` block: when, relative to the
// group's main tasks, the client runs it, and whether it keeps running
// beside them (Sidecar) or runs to completion once (ephemeral).
type TaskLifecycleConfig struct {
	Hook    string
	Sidecar bool
}

// Copy returns a copy.
func (l *TaskLifecycleConfig) Copy() *TaskLifecycleConfig { return copyPtr(l) }

// Validate checks the hook, in upstream's words.
func (l *TaskLifecycleConfig) Validate() error {
	if l == nil {
		return nil
	}
	switch l.Hook {
	case TaskLifecycleHookPrestart, TaskLifecycleHookPoststart, TaskLifecycleHookPoststop:
		return nil
	case "":
		return fmt.Errorf("no lifecycle hook provided")
	}
	return fmt.Errorf("invalid hook: %v", l.Hook)
}

// IsMain reports whether the task is one of its group's main tasks: it
// has no lifecycle hook.
func (t *Task) IsMain() bool { return t.Lifecycle == nil || t.Lifecycle.Hook == "" }

// IsPrestart reports whether the task runs before the main tasks start.
func (t *Task) IsPrestart() bool { return t.hook() == TaskLifecycleHookPrestart }

// IsPoststart reports whether the task runs once the main tasks started.
func (t *Task) IsPoststart() bool { return t.hook() == TaskLifecycleHookPoststart }

// IsPoststop reports whether the task runs once the other tasks are dead.
func (t *Task) IsPoststop() bool { return t.hook() == TaskLifecycleHookPoststop }

// IsSidecar reports whether the task is a lifecycle task that keeps running
// beside the main tasks (and is restarted like them) instead of running
// once to completion.
func (t *Task) IsSidecar() bool { return !t.IsMain() && t.Lifecycle.Sidecar }

func (t *Task) hook() string {
	if t.Lifecycle == nil {
		return ""
	}
	return t.Lifecycle.Hook
}

// validateLifecycle refuses a group whose tasks all have a lifecycle hook.
// Beyond upstream (1.6 accepts it): a group with no main task has nothing
// for its prestart and poststart tasks to prepare or accompany, and a
// service group's allocation would complete at once and be replaced for
// ever.
func (tg *TaskGroup) validateLifecycle() []string {
	if len(tg.Tasks) == 0 {
		return nil
	}
	for _, t := range tg.Tasks {
		if t.IsMain() {
			return nil
		}
	}
	return []string{"Task group must have at least one main task (a task without a lifecycle block)"}
}
