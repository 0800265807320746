package allocrunner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nomad-edge/nomad/client/checks"
	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/helper/clock"
	"github.com/nomad-edge/nomad/helper/netns"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// checksHook runs the checks of the allocation's services (client/checks)
// while the allocation runs, and stops them when it stops. Its results
// judge deployment health ("checks") and drive check_restart.
type checksHook struct {
	ar     *AllocRunner
	node   NodeInfo
	runner *checks.Runner
}

func newChecksHook(logger hclog.Logger, clk clock.Clock, ar *AllocRunner, node NodeInfo) *checksHook {
	return &checksHook{
		ar:   ar,
		node: node,
		runner: checks.New(checks.Config{
			Logger: logger, Clock: clk, AllocID: ar.id,
			// A change of status may decide the deployment's health.
			OnChange: func() { go ar.requestUpdate() },
		}),
	}
}

// observe is told the allocation and its client status after every
// change: running starts (or updates) its checks, a terminal status
// stops them for good.
func (h *checksHook) observe(alloc *structs.Allocation, status string) {
	switch {
	case structs.ClientTerminal(status) || alloc.ServerTerminalStatus():
		h.runner.Stop()
	case status == structs.AllocClientStatusRunning:
		h.runner.Set(h.build(alloc))
	}
}

// stop stops every check: the allocation stops or the client goes away.
func (h *checksHook) stop() { h.runner.Stop() }

// passing reports whether the allocation's checks pass for its
// deployment, and since when; an allocation without checks passes.
func (h *checksHook) passing(alloc *structs.Allocation) (bool, time.Time) {
	if countChecks(alloc) == 0 {
		return true, time.Time{}
	}
	if h.runner.Len() == 0 {
		return false, time.Time{} // not started yet
	}
	return h.runner.Passing()
}

// countChecks is the number of checks of the allocation's services.
func countChecks(alloc *structs.Allocation) int {
	tg := alloc.LookupTaskGroup()
	if tg == nil {
		return 0
	}
	n := 0
	for _, s := range tg.Services {
		n += len(s.Checks)
	}
	for _, t := range tg.Tasks {
		for _, s := range t.Services {
			n += len(s.Checks)
		}
	}
	return n
}

// build resolves the allocation's checks: each one's address as the
// service hook resolves its service's (the check's port and
// address_mode, else the service's), and for a script check its task.
func (h *checksHook) build(alloc *structs.Allocation) []checks.Check {
	tg := alloc.LookupTaskGroup()
	if tg == nil {
		return nil
	}
	var out []checks.Check
	add := func(owner string, s *structs.Service) {
		if s == nil || (s.Provider != "" && s.Provider != structs.ServiceProviderNomad) {
			return
		}
		for _, sc := range s.Checks {
			if sc == nil {
				continue
			}
			target := &structs.Service{PortLabel: s.PortLabel, AddressMode: s.AddressMode, Address: s.Address}
			if sc.PortLabel != "" {
				target.PortLabel = sc.PortLabel
			}
			if sc.AddressMode != "" && sc.AddressMode != structs.AddressModeAuto {
				target.AddressMode = sc.AddressMode
			}
			addr, port := serviceAddress(alloc, h.node, target, h.ar.network.address())
			// The task that runs a script and that check_restart restarts.
			task := cmpOr(owner, sc.TaskName, s.TaskName)
			c := checks.Check{
				Group: alloc.Name, Task: owner, Service: s.Name, Spec: sc,
				Address: net.JoinHostPort(addr, strconv.Itoa(port)),
			}
			if tr, err := h.ar.Task(task); err == nil {
				c.Exec = scriptExec(tr)
				if sc.CheckRestart != nil {
					c.Restart = func(reason string) { tr.restartUnhealthy(reason) }
					c.TaskStarted = tr.runningSince
				}
			}
			out = append(out, c)
		}
	}
	for _, s := range tg.Services {
		add("", s)
	}
	for _, t := range tg.Tasks {
		for _, s := range t.Services {
			add(t.Name, s)
		}
	}
	return out
}

func cmpOr(vals ...string) string {
	if i := slices.IndexFunc(vals, func(v string) bool { return v != "" }); i >= 0 {
		return vals[i]
	}
	return ""
}

// CheckResults returns the latest result of each of the allocation's
// checks, by check ID (GET /v1/client/allocation/:id/checks).
func (ar *AllocRunner) CheckResults() map[string]checks.Result {
	return ar.checks.runner.Results()
}

// ErrScriptNotSupported is a script check or a template's change_script
// in a task whose driver isolates its filesystem: the command is run
// beside the task, as `alloc exec` runs one, which only a driver without
// isolation (raw_exec) allows.
var ErrScriptNotSupported = errors.New("scripts (script checks, change_script) are not supported by the task's driver")

// scriptExec runs a script check's or a change_script's command as
// `alloc exec` runs one: in the task's environment and directory, through
// ExecInfo.
func scriptExec(tr *TaskRunner) checks.ExecFunc {
	return func(ctx context.Context, command string, args []string) ([]byte, int, error) {
		info, err := tr.ExecInfo()
		if err != nil {
			return nil, 0, err
		}
		if info.Isolation != drivers.FSIsolationNone {
			return nil, 0, fmt.Errorf("%w (%s)", ErrScriptNotSupported, info.Driver)
		}
		cmd := info.Command(ctx, command, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		// Kill the whole group at the timeout: a shell's children too.
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		cmd.WaitDelay = time.Second
		var buf bytes.Buffer
		cmd.Stdout, cmd.Stderr = &buf, &buf
		err = info.Start(cmd.Start)
		if err == nil {
			err = cmd.Wait()
		}
		out := buf.Bytes()
		var exitErr *exec.ExitError
		switch {
		case errors.As(err, &exitErr):
			return out, exitErr.ExitCode(), nil
		case err != nil && ctx.Err() != nil:
			return out, -1, nil
		case err != nil:
			return out, 0, err
		}
		return out, 0, nil
	}
}

// execPath is the PATH of a command run in a task that sets none.
const execPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Command returns the command name args, to run beside the task in its
// environment (with a PATH when the task has none) and working
// directory: what `alloc exec` and script checks run.
func (i ExecInfo) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	env := map[string]string{"PATH": execPath}
	maps.Copy(env, i.Env)
	for _, k := range slices.Sorted(maps.Keys(env)) {
		cmd.Env = append(cmd.Env, k+"="+env[k])
	}
	cmd.Dir = i.Dir
	return cmd
}

// Start starts a command from Command, in the task's network namespace
// when it has one of its own (bridge mode), so that it reaches what the
// task listens on as the task does. start is cmd.Start or what wraps it
// (a pty's).
func (i ExecInfo) Start(start func() error) error {
	if i.NetNSPath == "" {
		return start()
	}
	return netns.Do(i.NetNSPath, start)
}

// runningSince is when the task last started, zero while it is not
// running: check_restart's grace counts from it.
func (tr *TaskRunner) runningSince() time.Time {
	st := tr.State()
	if st.State != structs.TaskStateRunning {
		return time.Time{}
	}
	return latest(st.StartedAt, st.LastRestart)
}

// restartUnhealthy restarts the task for check_restart: it is stopped and
// started again through its restart policy, as a failure (the restart
// counts against attempts and waits the policy's delay; past them, the
// task fails), with upstream's Restart Signaled event.
func (tr *TaskRunner) restartUnhealthy(reason string) {
	if !tr.running() || tr.killed() {
		return
	}
	e := newEvent(structs.TaskRestartSignal, tr.clock.Now())
	e.RestartReason = reason
	e.DisplayMessage = reason
	tr.EmitEvent(e)
	select {
	case tr.restartCh <- restartRequest{failure: true, reason: reason}:
	default:
	}
}

// restartRequest is a restart asked of Run: by an operator (in place, not
// counted), or by check_restart (a failure, through the restart policy).
type restartRequest struct {
	failure bool
	reason  string
}
