package tasks

import (
	"context"
	"sync"
	"time"

	"github.com/nomad-edge/nomad/drivers"
)

// Task is the driver-independent state of one task: when it started, whether
// and how it exited. The first call to Exit wins, so that racing exit sources
// (the process exiting, a forced kill, a timer) can all report without
// coordinating and the task runner still sees exactly one result.
type Task struct {
	id   string
	name string
	done chan struct{} // closed by the winning Exit

	mu          sync.Mutex
	startedAt   time.Time
	completedAt time.Time
	result      *drivers.ExitResult
}

// New returns a running task.
func New(id, name string, startedAt time.Time) *Task {
	return &Task{id: id, name: name, startedAt: startedAt, done: make(chan struct{})}
}

// ID returns the task ID.
func (t *Task) ID() string { return t.id }

// Exit records the result and wakes every waiter. It reports whether this call
// was the one that recorded it.
func (t *Task) Exit(res *drivers.ExitResult, at time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.result != nil {
		return false
	}
	if res == nil {
		res = &drivers.ExitResult{}
	}
	t.result = res.Copy()
	t.completedAt = at
	close(t.done)
	return true
}

// Done is closed once the task has exited.
func (t *Task) Done() <-chan struct{} { return t.done }

// Exited reports whether the task has exited.
func (t *Task) Exited() bool {
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

// Result returns a copy of the exit result, or nil while running.
func (t *Task) Result() *drivers.ExitResult {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.result.Copy()
}

// StartedAt returns the start time.
func (t *Task) StartedAt() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.startedAt
}

// Status returns a snapshot; attrs become DriverAttributes as given.
func (t *Task) Status(attrs map[string]string) *drivers.TaskStatus {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := &drivers.TaskStatus{
		ID:               t.id,
		Name:             t.name,
		State:            drivers.TaskStateRunning,
		StartedAt:        t.startedAt,
		DriverAttributes: attrs,
	}
	if t.result != nil {
		st.State = drivers.TaskStateExited
		st.CompletedAt = t.completedAt
		st.ExitResult = t.result.Copy()
	}
	return st
}

// Wait implements Driver.WaitTask for this task. It costs one goroutine while
// the task runs and none once it has exited.
func (t *Task) Wait(ctx context.Context) <-chan *drivers.ExitResult {
	ch := make(chan *drivers.ExitResult, 1)
	if t.Exited() {
		ch <- t.Result()
		close(ch)
		return ch
	}
	if ctx == nil {
		ctx = context.Background()
	}
	go func() {
		defer close(ch)
		select {
		case <-t.done:
			ch <- t.Result()
		case <-ctx.Done():
		}
	}()
	return ch
}
