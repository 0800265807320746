package tasks

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/nomad-edge/nomad/drivers"
)

// Waiter is a tracked task whose exit can be waited for; *Task is one.
type Waiter interface {
	Wait(ctx context.Context) <-chan *drivers.ExitResult
}

// Stopper is a tracked task a driver can stop.
type Stopper interface {
	Exited() bool
	// Stop sends sig, escalates to SIGKILL after timeout and returns once
	// the task has exited (or failed to die within the driver's kill
	// wait). Stopping an exited task is a no-op.
	Stop(sig syscall.Signal, timeout time.Duration) error
}

// Destroyer is a tracked task a driver can destroy.
type Destroyer interface {
	Stopper
	// Release frees what the driver holds for the exited task: leftover
	// processes, cgroups, exit watches.
	Release()
}

// WaitTask implements drivers.Driver.WaitTask over s.
func WaitTask[T Waiter](s *Set[T], ctx context.Context, id string) (<-chan *drivers.ExitResult, error) {
	h, err := s.Get(id)
	if err != nil {
		return nil, err
	}
	return h.Wait(ctx), nil
}

// StopTask implements drivers.Driver.StopTask over s.
func StopTask[T Stopper](s *Set[T], id string, timeout time.Duration, signal string) error {
	sig, err := drivers.ParseSignal(signal)
	if err != nil {
		return fmt.Errorf("stopping task %q: %w", id, err)
	}
	h, err := s.Get(id)
	if err != nil {
		return err
	}
	return h.Stop(sig, timeout)
}

// DestroyTask implements drivers.Driver.DestroyTask over s: a running task
// is refused unless force, then killed; its resources are released and it
// is forgotten.
func DestroyTask[T Destroyer](s *Set[T], id string, force bool) error {
	h, err := s.Get(id)
	if err != nil {
		return err
	}
	if !h.Exited() {
		if !force {
			return fmt.Errorf("destroying task %q: %w", id, drivers.ErrTaskRunning)
		}
		if err := h.Stop(syscall.SIGKILL, 0); err != nil {
			return err
		}
	}
	h.Release()
	s.Delete(id)
	return nil
}
