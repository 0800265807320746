package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/internal/stats"
	"github.com/nomad-edge/nomad/drivers/internal/tasks"
)

// ErrKillTimeout is returned by StopTask when the container is still
// running after SIGKILL and the kill wait.
var ErrKillTimeout = errors.New("container did not stop after SIGKILL")

// taskState is the DriverState persisted in the task handle: the container
// is the task, so its ID is all a new client process needs to re-attach.
type taskState struct {
	ContainerID string `json:"container_id"`
	ImageID     string `json:"image_id"`
}

// taskHandle is one tracked container.
type taskHandle struct {
	*tasks.Task
	d      *Driver
	logger hclog.Logger
	state  taskState // immutable after construction

	cpu       *stats.Sampler
	recovered bool
	stopLogs  context.CancelFunc
	logsDone  chan struct{}
}

// RecoverTask implements drivers.Driver: it finds the container by its ID
// and follows it again. A container that exited while the client was away
// is tracked as exited with its real exit code, which the engine kept.
func (d *Driver) RecoverTask(handle *drivers.TaskHandle) error {
	var st taskState
	id, tracked, err := d.tasks.OpenHandle(handle, HandleVersion, &st)
	if err != nil || tracked {
		return err
	}
	if st.ContainerID == "" {
		return fmt.Errorf("task %q: %w: no container ID", id, drivers.ErrInvalidHandle)
	}
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	info, err := d.api.inspectContainer(ctx, st.ContainerID)
	if errors.Is(err, ErrNoSuchContainer) {
		return fmt.Errorf("task %q: %w: container %s is gone", id, drivers.ErrTaskNotFound, shortID(st.ContainerID))
	}
	if err != nil {
		return fmt.Errorf("recovering task %q: %w", id, err)
	}
	h := d.newHandle(handle.Config, st, handle.StartedAt)
	h.recovered = true
	if err := d.tasks.Add(id, h); err != nil {
		if errors.Is(err, drivers.ErrTaskExists) {
			return nil
		}
		return err
	}
	d.images.acquire(st.ImageID)
	go d.watchExit(h)
	if info.State.Running {
		d.follow(h, handle.Config, logsSince(handle.Config.StdoutPath, handle.Config.StderrPath))
	} else {
		close(h.logsDone)
	}
	d.logger.Debug("recovered task", "task_id", id, "container_id", shortID(st.ContainerID), "running", info.State.Running)
	return nil
}

// logsSince is where to resume the log stream after a restart: the last
// write to either log file. Lines the container wrote while the client was
// away come after it, so none is lost.
func logsSince(paths ...string) time.Time {
	var last time.Time
	for _, p := range paths {
		if p == "" {
			continue
		}
		// An empty file's time is when the agent created it, which may
		// be after the container's first lines.
		if fi, err := os.Stat(p); err == nil && fi.Size() > 0 && fi.ModTime().After(last) {
			last = fi.ModTime()
		}
	}
	if !last.IsZero() {
		// The engine's since is exclusive of nothing: step past the last
		// line we already have.
		last = last.Add(time.Nanosecond)
	}
	return last
}

// WaitTask implements drivers.Driver.
func (d *Driver) WaitTask(ctx context.Context, taskID string) (<-chan *drivers.ExitResult, error) {
	return tasks.WaitTask(d.tasks, ctx, taskID)
}

// StopTask implements drivers.Driver: the task's kill_signal, then SIGKILL
// after timeout.
func (d *Driver) StopTask(taskID string, timeout time.Duration, signal string) error {
	return tasks.StopTask(d.tasks, taskID, timeout, signal)
}

// Stop implements tasks.Stopper.
func (h *taskHandle) Stop(sig syscall.Signal, timeout time.Duration) error {
	if h.Exited() {
		return nil
	}
	d := h.d
	exited, err := tasks.Escalate(tasks.EscalateInput{
		Clock: d.clock, Done: h.Done(), Send: h.kill,
		Signal: sig, Timeout: timeout, KillWait: d.killWait, Logger: h.logger,
	})
	if err != nil {
		return fmt.Errorf("stopping task %q: %w", h.ID(), err)
	}
	if !exited {
		return fmt.Errorf("stopping task %q (container %s): %w within %s", h.ID(), shortID(h.state.ContainerID), ErrKillTimeout, d.killWait)
	}
	return nil
}

// SignalTask implements drivers.Signaler: the engine sends the signal to
// the container's command, its PID 1, which gets only a signal it handles.
func (d *Driver) SignalTask(taskID, signal string) error {
	return tasks.SignalTask(d.tasks, taskID, signal)
}

// Signal implements tasks.Signaller.
func (h *taskHandle) Signal(sig syscall.Signal) error { return h.kill(sig) }

func (h *taskHandle) kill(sig syscall.Signal) error {
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	err := h.d.api.killContainer(ctx, h.state.ContainerID, strconv.Itoa(int(sig)))
	if errors.Is(err, ErrNoSuchContainer) {
		return nil // watchExit reports it
	}
	return err
}

// DestroyTask implements drivers.Driver: the container is removed (unless
// the plugin's gc { container = false }) and its image released for the
// image GC.
func (d *Driver) DestroyTask(taskID string, force bool) error {
	return tasks.DestroyTask(d.tasks, taskID, force)
}

// Release implements tasks.Destroyer: the log stream is drained and
// closed, the container removed and its image released.
func (h *taskHandle) Release() error {
	d := h.d
	if h.stopLogs != nil {
		// Let the stream drain what the container wrote last, but do not
		// hang on an engine that keeps it open.
		t := d.clock.NewTimer(time.Second)
		select {
		case <-h.logsDone:
		case <-t.C():
		}
		t.Stop()
		h.stopLogs()
		<-h.logsDone
	}
	if d.pc.GCContainer {
		ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
		defer cancel()
		if err := d.api.removeContainer(ctx, h.state.ContainerID); err != nil {
			return fmt.Errorf("removing container: %w", err)
		}
	}
	d.images.release(h.state.ImageID)
	return nil
}

// InspectTask implements drivers.Driver.
func (d *Driver) InspectTask(taskID string) (*drivers.TaskStatus, error) {
	h, err := d.tasks.Get(taskID)
	if err != nil {
		return nil, err
	}
	return h.Status(map[string]string{
		"container_id": h.state.ContainerID,
		"image_id":     h.state.ImageID,
		"recovered":    strconv.FormatBool(h.recovered),
	}), nil
}

// FindTask implements drivers.TaskFinder: the container carries the
// allocation as a label, so a client that lost its state finds it with
// one list call. Of the allocation's containers the task's is the one
// labelled with its name, or, without that label, the one of its name
// ("<task>-<alloc ID>"): upstream Nomad labels its containers with the
// allocation only (the task's name only with extra_labels), and a client
// taking over an upstream node finds them so.
func (d *Driver) FindTask(cfg *drivers.TaskConfig) (*drivers.TaskHandle, error) {
	if cfg == nil || cfg.ID == "" || cfg.AllocID == "" || cfg.Name == "" {
		return nil, fmt.Errorf("%w: finding a task needs its ID, allocation and name", drivers.ErrInvalidHandle)
	}
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	list, err := d.api.listContainers(ctx, map[string]string{labelAllocID: cfg.AllocID})
	if err != nil {
		return nil, fmt.Errorf("finding task %q: %w", cfg.ID, err)
	}
	for _, c := range list {
		if !c.State.Running {
			continue
		}
		if name, ok := c.Config.Labels[labelTaskName]; ok && name != cfg.Name || !ok && c.Name != "/"+containerName(cfg) {
			continue
		}
		info, err := d.api.inspectContainer(ctx, c.ID)
		if err != nil {
			continue
		}
		handle, err := drivers.NewTaskHandle(HandleVersion, cfg, info.State.StartedAt, taskState{ContainerID: info.ID, ImageID: info.Image})
		if err != nil {
			return nil, err
		}
		if err := d.RecoverTask(handle); err != nil {
			return nil, err
		}
		d.logger.Info("found a container left running by an earlier client", "task_id", cfg.ID, "container_id", shortID(info.ID))
		return handle, nil
	}
	return nil, drivers.ErrTaskNotFound
}

func writerOrDiscard(f *os.File) io.Writer {
	if f == nil {
		return io.Discard
	}
	return f
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		if f != nil {
			_ = f.Close()
		}
	}
}
