package client

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nomad-edge/nomad/client/allocrunner"
	"github.com/nomad-edge/nomad/client/state"
	"github.com/nomad-edge/nomad/client/upstreamstate"
	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/helper/clock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// Taking over an upstream client's node (upgrading.md, "Replacing an
// upstream client"): started on the data_dir an upstream Nomad 1.6.5
// client used, with no node of its own yet, this client becomes that node
// (same ID and secret, so the servers see the node come back, not a new
// one) and re-attaches to the tasks it left running instead of starting
// them again.
//
// The tasks' allocations come from the servers, as for a client that lost
// its state: each task, before its first start, is looked for by its
// driver (raw_exec finds it by its environment). A task found is adopted
// as it runs; upstream's helpers beside it (its executor and logmon) are
// then stopped, once this client reads the task's log FIFOs, so that
// nothing of upstream's is left running. A task its driver cannot find is
// killed before this client starts it again, so that it never runs twice;
// an upstream allocation the servers no longer give this node is killed
// with its helpers. Once every task upstream left is settled so, upstream's
// files are moved to <data_dir>/client/upstream-1.6.5/ (where a rollback
// finds them); until then each start of the client takes over again, which
// is idempotent.

// takeoverDir is where upstream's files go once the takeover is done.
const takeoverDir = "upstream-1.6.5"

// takeoverKillWait bounds how long a killed upstream task is waited for
// before this client starts it again.
const takeoverKillWait = 10 * time.Second

type taskKey struct{ alloc, task string }

// takeover is a takeover in progress.
type takeover struct {
	logger   hclog.Logger
	clock    clock.Clock
	dataDir  string // upstream's data_dir: its client/ is our StateDir
	allocDir string

	// destroy finds a task by its driver (drivers.TaskFinder) and
	// destroys it, reporting whether it found one.
	destroy func(allocID string, ut upstreamstate.Task) bool

	mu sync.Mutex
	// pending are the tasks upstream left a process or helper for that
	// are not settled yet.
	pending map[taskKey]upstreamstate.Task
	done    bool
}

// takeOver starts taking over the upstream client's node found in
// cfg.UpstreamDataDir, when there is one and this client has no node of
// its own: it stores the node's identity and makes the allocation runners
// look for the tasks. A data_dir with both this client's node and another
// upstream node is refused, as is an upstream state this client cannot
// read (an upstream agent still running on it, a damaged file): nothing
// is changed then.
func (c *Client) takeOver() error {
	dir := c.cfg.UpstreamDataDir
	if dir == "" {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, "client", takeoverDir)); err == nil {
		c.tookOver = true
	}
	node, err := upstreamstate.Read(dir, upstreamstate.Options{})
	if errors.Is(err, upstreamstate.ErrNotUpstream) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("taking over the upstream Nomad client's node in %s: %w (to start as a new node instead, move %s aside)",
			dir, err, filepath.Join(dir, upstreamstate.NodeIDFile))
	}
	id, err := c.db.GetNodeIdentity()
	if err != nil {
		return fmt.Errorf("reading node identity: %w", err)
	}
	switch id.NodeID {
	case "":
		if err := c.db.PutNodeIdentity(state.NodeIdentity{NodeID: node.NodeID, SecretID: node.SecretID}); err != nil {
			return fmt.Errorf("persisting the upstream node's identity: %w", err)
		}
	case node.NodeID:
		// An earlier start began this takeover.
	default:
		return fmt.Errorf("%s holds an upstream Nomad client's node %s while this client is node %s: move one of them aside",
			dir, node.NodeID, id.NodeID)
	}
	t := &takeover{
		logger:   c.logger.Named("takeover").With("node_id", node.NodeID),
		clock:    c.clock,
		dataDir:  dir,
		allocDir: c.cfg.AllocDir,
		pending:  map[taskKey]upstreamstate.Task{},
		destroy:  c.destroyFound,
	}
	running := 0
	for _, a := range node.Allocs {
		for _, task := range a.Tasks {
			if task.Handle == nil {
				continue
			}
			t.pending[taskKey{a.ID, task.Name}] = task
			if _, ok := upstreamstate.TaskProcess(a.ID, task); ok {
				running++
			}
		}
	}
	t.logger.Info("taking over an upstream Nomad client's node", "data_dir", dir,
		"allocs", len(node.Allocs), "running_tasks", running)
	c.takeover, c.tookOver = t, true
	t.finishIfSettled()
	return nil
}

// adoptReason is what the task event of an adoption says.
func (t *takeover) adoptReason() string {
	if t == nil {
		return ""
	}
	return "taken over from an upstream Nomad client"
}

// taskRunningHook and notAdoptedHook are the allocation runners' hooks
// while the takeover lasts, nil without one.
func (t *takeover) taskRunningHook() func(allocID, task string) {
	if !t.active() {
		return nil
	}
	return t.taskRunning
}

func (t *takeover) notAdoptedHook() func(allocID, task string) string {
	if !t.active() {
		return nil
	}
	return t.notAdopted
}

// taskRunning is allocrunner.Config.TaskRunning: the task runs under this
// client, adopted or started, and its log FIFOs are read here. Upstream's
// helpers for it go.
func (t *takeover) taskRunning(allocID, task string) {
	t.mu.Lock()
	ut, ok := t.pending[taskKey{allocID, task}]
	t.mu.Unlock()
	if !ok {
		return
	}
	_, alive := upstreamstate.TaskProcess(allocID, ut)
	t.retireHelpers(allocID, ut, alive)
	t.settle(allocID, ut)
}

// notAdopted is allocrunner.Config.NotAdopted: the task's driver did not
// find it, and this client is about to start it. Upstream's process, if it
// still runs, is killed first, so that the task never runs twice; the
// message says so in the task's events.
func (t *takeover) notAdopted(allocID, task string) string {
	t.mu.Lock()
	ut, ok := t.pending[taskKey{allocID, task}]
	t.mu.Unlock()
	if !ok {
		return ""
	}
	pid, running := upstreamstate.TaskProcess(allocID, ut)
	if running {
		t.kill(allocID, ut, pid)
	}
	t.retireHelpers(allocID, ut, false)
	t.settle(allocID, ut)
	if !running {
		return ""
	}
	return fmt.Sprintf("Could not re-attach to the task upstream Nomad left running (PID %d): %s; killed it to start it again", pid, unadoptable(ut.Driver))
}

// unadoptable says why a task of driver was not found to adopt.
func unadoptable(driver string) string {
	switch driver {
	case "exec":
		return "upstream runs an exec task in a container of its own (libcontainer: its cgroup, namespaces and chroot), which this client's exec driver does not take over"
	default:
		return fmt.Sprintf("the %s driver did not find it", driver)
	}
}

// active reports whether the takeover still has tasks to settle.
func (t *takeover) active() bool {
	if t == nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return !t.done
}

// settleUnclaimed kills what upstream left for the allocations the servers
// no longer give this node to run (claimed reports whether they do), and
// settles tasks whose process has ended. Called after each sync with the
// servers while the takeover lasts.
func (t *takeover) settleUnclaimed(claimed func(allocID string) bool) {
	t.mu.Lock()
	var check []taskKey
	for k := range t.pending {
		check = append(check, k)
	}
	t.mu.Unlock()
	for _, k := range check {
		t.mu.Lock()
		ut, ok := t.pending[k]
		t.mu.Unlock()
		if !ok {
			continue
		}
		pid, running := upstreamstate.TaskProcess(k.alloc, ut)
		switch {
		case !claimed(k.alloc):
			if running {
				t.logger.Info("killing a task upstream Nomad left running for an allocation the servers no longer give this node",
					"alloc_id", k.alloc, "task", k.task, "pid", pid)
				t.kill(k.alloc, ut, pid)
			} else if t.destroy != nil && t.destroy(k.alloc, ut) {
				// A task upstream named no process for (a container):
				// its driver found it and destroyed it.
				t.logger.Info("destroyed a task upstream Nomad left running for an allocation the servers no longer give this node",
					"alloc_id", k.alloc, "task", k.task, "driver", ut.Driver)
			}
		case running:
			continue // its runner has yet to look for it
		}
		t.retireHelpers(k.alloc, ut, false)
		t.settle(k.alloc, ut)
	}
}

// kill kills the task's process group and waits for its leader to go.
func (t *takeover) kill(allocID string, ut upstreamstate.Task, pid int) {
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		t.logger.Warn("cannot kill a task upstream Nomad left running", "alloc_id", allocID, "task", ut.Name, "pid", pid, "error", err)
		return
	}
	deadline := t.clock.Now().Add(takeoverKillWait)
	for {
		if _, ok := upstreamstate.TaskProcess(allocID, ut); !ok {
			return
		}
		if !t.clock.Now().Before(deadline) {
			t.logger.Warn("a killed upstream task is still there", "alloc_id", allocID, "task", ut.Name, "pid", pid)
			return
		}
		// A killed process is gone once its parent (upstream's
		// executor, or init) reaps it: nothing to wait on but the
		// process table.
		clock.Sleep(t.clock, 20*time.Millisecond, nil)
	}
}

// retireHelpers kills upstream's executor of the task, and its logmon
// unless the task still runs. A running task opened its log FIFOs for
// writing only (upstream's drivers do; ours open them read-write, so that
// a task always holds a reader itself), and its next write would kill it
// with SIGPIPE once no reader is left, as happens whenever this client
// stops. So its logmon is kept as the FIFOs' standby reader, stopped
// (SIGSTOP): it reads nothing while this client copies the output, and
// while no client runs the task's writes fill the pipe and wait, as ours
// do. It is killed with the allocation (reapStandbys). A logmon of a
// running task whose FIFOs this client does not read is left running.
func (t *takeover) retireHelpers(allocID string, ut upstreamstate.Task, taskAlive bool) {
	fifos := upstreamstate.LogFIFOs(t.allocDir, allocID, ut.Name)
	for i, f := range fifos {
		if real, err := filepath.EvalSymlinks(f); err == nil {
			fifos[i] = real
		}
	}
	for _, h := range upstreamstate.Helpers(t.allocDir, allocID, ut) {
		sig, what := syscall.SIGKILL, "stopped an upstream helper"
		if h.Kind == upstreamstate.Logmon && taskAlive {
			if !upstreamstate.HoldsAny(os.Getpid(), fifos) {
				t.logger.Warn("leaving upstream's logmon running: this client does not read the task's log FIFOs", "alloc_id", allocID, "task", ut.Name, "pid", h.PID)
				continue
			}
			sig, what = syscall.SIGSTOP, "kept upstream's logmon, stopped, as the standby reader of the task's log FIFOs"
		}
		if err := syscall.Kill(h.PID, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			t.logger.Warn("cannot signal an upstream helper", "kind", h.Kind, "pid", h.PID, "signal", sig, "error", err)
			continue
		}
		t.logger.Debug(what, "alloc_id", allocID, "task", ut.Name, "kind", h.Kind, "pid", h.PID)
	}
}

// runAlloc runs an allocation's runner; once every task of the
// allocation is dead for good, upstream's standby logmons of it go.
func (c *Client) runAlloc(ar *allocrunner.AllocRunner) {
	ar.Run()
	if ar.Alloc().ClientTerminalStatus() {
		c.reapStandbys(ar.ID())
	}
}

// reapStandbys kills the upstream logmons kept for an allocation once its
// tasks are dead for good, or its runner is destroyed (the FIFOs go with
// its directory). Only on a node that was taken over (the check is a scan
// of /proc).
func (c *Client) reapStandbys(allocID string) {
	if !c.tookOver {
		return
	}
	for _, pid := range upstreamstate.Logmons(c.cfg.AllocDir, allocID) {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			c.logger.Warn("cannot kill upstream's standby logmon", "alloc_id", allocID, "pid", pid, "error", err)
			continue
		}
		c.logger.Debug("killed upstream's standby logmon", "alloc_id", allocID, "pid", pid)
	}
}

func (t *takeover) settle(allocID string, ut upstreamstate.Task) {
	t.mu.Lock()
	delete(t.pending, taskKey{allocID, ut.Name})
	t.mu.Unlock()
	t.finishIfSettled()
}

// finishIfSettled moves upstream's files aside once nothing of upstream's
// is left to settle: later starts are this client's own.
func (t *takeover) finishIfSettled() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done || len(t.pending) > 0 {
		return
	}
	dst := filepath.Join(t.dataDir, "client", takeoverDir)
	if err := os.MkdirAll(dst, 0o700); err != nil {
		t.logger.Error("cannot move upstream's state aside; the next start takes over again", "error", err)
		return
	}
	// The node ID first: without it a start no longer takes over, and
	// this client's own copy of the identity stands.
	for _, f := range []string{upstreamstate.NodeIDFile, upstreamstate.SecretIDFile, upstreamstate.StateFile} {
		src := filepath.Join(t.dataDir, f)
		if err := os.Rename(src, filepath.Join(dst, filepath.Base(f))); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.logger.Error("cannot move upstream's state aside; the next start takes over again", "file", src, "error", err)
			return
		}
	}
	t.done = true
	t.logger.Info("took over the upstream Nomad client's node: its files are in " + dst)
}

// destroyFound asks the task's driver for the task upstream left running
// and destroys it, reporting whether there was one.
func (c *Client) destroyFound(allocID string, ut upstreamstate.Task) bool {
	d, ok := c.drivers[ut.Driver]
	if !ok {
		return false
	}
	finder, ok := d.(drivers.TaskFinder)
	if !ok {
		return false
	}
	cfg := &drivers.TaskConfig{ID: allocID + "/" + ut.Name + "/takeover", AllocID: allocID, Name: ut.Name}
	h, err := finder.FindTask(cfg)
	if err != nil {
		return false
	}
	if err := d.DestroyTask(h.Config.ID, true); err != nil {
		c.logger.Warn("cannot destroy a task upstream Nomad left running", "alloc_id", allocID, "task", ut.Name, "error", err)
	}
	return true
}

// claimedAlloc reports whether the servers give this node allocID to run.
func (c *Client) claimedAlloc(allocID string) bool {
	c.allocMu.RLock()
	ar, ok := c.allocs[allocID]
	c.allocMu.RUnlock()
	if !ok {
		return false
	}
	a := ar.Alloc()
	return a.DesiredStatus == structs.AllocDesiredStatusRun && !a.ClientTerminalStatus()
}
