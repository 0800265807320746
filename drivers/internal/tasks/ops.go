package tasks

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/helper/clock"
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
	// processes, cgroups, exit watches, containers. A task whose release
	// failed stays tracked, so that destroying it can be retried.
	Release() error
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

// Signaller is a tracked task a driver can send a signal without stopping
// it.
type Signaller interface {
	Signal(sig syscall.Signal) error
}

// SignalTask implements drivers.Signaler.SignalTask over s.
func SignalTask[T Signaller](s *Set[T], id, signal string) error {
	sig, err := drivers.ParseSignal(signal)
	if err != nil {
		return err
	}
	h, err := s.Get(id)
	if err != nil {
		return err
	}
	if err := h.Signal(sig); err != nil {
		return fmt.Errorf("signalling task %q: %w", id, err)
	}
	return nil
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
	if err := h.Release(); err != nil {
		return fmt.Errorf("destroying task %q: %w", id, err)
	}
	s.Delete(id)
	return nil
}

// OpenHandle checks the envelope of a handle RecoverTask was given (a
// config with an ID, the driver's layout version) and, unless the task is
// already tracked (tracked: recovering it again is a no-op), decodes its
// DriverState into state. Errors wrap drivers.ErrInvalidHandle.
func (s *Set[T]) OpenHandle(h *drivers.TaskHandle, version int, state any) (id string, tracked bool, err error) {
	if h == nil || h.Config == nil || h.Config.ID == "" {
		return "", false, fmt.Errorf("%w: missing task config or ID", drivers.ErrInvalidHandle)
	}
	id = h.Config.ID
	if h.Version != version {
		return id, false, fmt.Errorf("%w: task %q: handle version %d, want %d",
			drivers.ErrInvalidHandle, id, h.Version, version)
	}
	if s.Has(id) {
		return id, true, nil
	}
	if err := h.GetDriverState(state); err != nil {
		return id, false, fmt.Errorf("task %q: %w", id, err)
	}
	return id, false, nil
}

// EscalateInput is what Escalate needs of a task and its driver.
type EscalateInput struct {
	Clock clock.Clock
	// Done is closed once the task has exited.
	Done <-chan struct{}
	// Send delivers a signal to the task.
	Send     func(syscall.Signal) error
	Signal   syscall.Signal
	Timeout  time.Duration
	KillWait time.Duration
	Logger   hclog.Logger
}

// Escalate is the stop of a task that runs real processes: it sends the
// stop signal, gives the task Timeout to exit, sends SIGKILL and gives it
// KillWait more, all on the driver's clock. It reports whether the task
// exited; an error is a signal that could not be sent.
func Escalate(in EscalateInput) (exited bool, err error) {
	if err := in.Send(in.Signal); err != nil {
		return false, fmt.Errorf("sending %s: %w", in.Signal, err)
	}
	if in.Signal != syscall.SIGKILL {
		if !clock.Sleep(in.Clock, in.Timeout, in.Done) {
			return true, nil
		}
		in.Logger.Debug("task still running after stop signal, sending SIGKILL", "signal", in.Signal, "timeout", in.Timeout)
		if err := in.Send(syscall.SIGKILL); err != nil {
			return false, fmt.Errorf("sending SIGKILL: %w", err)
		}
	}
	return !clock.Sleep(in.Clock, in.KillWait, in.Done), nil
}
