//go:build linux

package exec

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/internal/cgroup"
)

// A task that allocates past its memory limit is killed by the kernel, and
// the driver says it was an OOM kill: an operator reading the task's events
// must learn to raise `memory`, not hunt for a crash.
func TestStartTask_OOMKilled(t *testing.T) {
	needIsolation(t)
	d := newTestDriver(t, nil)
	// tail buffers /dev/zero waiting for a newline that never comes.
	cfg := newTaskConfig(t, "/usr/bin/tail", "/dev/zero")
	cfg.Resources = drivers.Resources{MemoryMB: 16}
	_, err := d.StartTask(cfg)
	must.NoError(t, err)
	res := waitExit(t, d, cfg.ID)
	must.True(t, res.OOMKilled, must.Sprint(res))
	must.Eq(t, int(syscall.SIGKILL), res.Signal)
	must.False(t, res.Successful())
}

// The cgroup limits are what the scheduler reserved: memory_max hard,
// memory soft, cpu as shares (or weight), pids from pids_limit; and the
// task's processes are in its cgroups, as its /proc/self/cgroup says.
func TestStartTask_CgroupLimits(t *testing.T) {
	needIsolation(t)
	d := newTestDriver(t, nil)
	cfg := newTaskConfig(t, "/bin/sleep", "30")
	cfg.Resources = drivers.Resources{CPUShares: 300, MemoryMB: 64, MemoryMaxMB: 128}
	cfg.Config["pids_limit"] = 50
	_, err := d.StartTask(cfg)
	must.NoError(t, err)
	h, err := d.tasks.Get(cfg.ID)
	must.NoError(t, err)
	cg := h.State.Cgroups

	read := func(controller, file string) string {
		b, err := os.ReadFile(filepath.Join(cg.Dir(controller), file))
		must.NoError(t, err)
		return strings.TrimSpace(string(b))
	}
	if cg.Version == 2 {
		must.Eq(t, "134217728", read("memory", "memory.max"))
		must.Eq(t, "67108864", read("memory", "memory.low"))
		must.Eq(t, itoa(cgroup.SharesToWeight(300)), read("cpu", "cpu.weight"))
	} else {
		must.Eq(t, "134217728", read("memory", "memory.limit_in_bytes"))
		must.Eq(t, "67108864", read("memory", "memory.soft_limit_in_bytes"))
		must.Eq(t, "300", read("cpu", "cpu.shares"))
	}
	must.Eq(t, "50", read("pids", "pids.max"))
	must.SliceContains(t, cg.Pids(), h.State.Pid)
	own, err := os.ReadFile(filepath.Join("/proc", itoa(h.State.Pid), "cgroup"))
	must.NoError(t, err)
	must.StrContains(t, string(own), cgroup.NameFor(cfg.ID), must.Sprint("the kernel puts the task in its own cgroup"))

	must.NoError(t, d.StopTask(cfg.ID, 0, "SIGKILL"))

	// Destroying the task removes its cgroups.
	must.NoError(t, d.DestroyTask(cfg.ID, false))
	for _, p := range cg.Paths {
		_, err := os.Stat(p)
		must.True(t, errors.Is(err, os.ErrNotExist), must.Sprintf("cgroup %s removed", p))
	}
}

// A root task's capabilities are bounded by the default set, cap_drop and
// cap_add: a job gets what the operator allows and no more.
func TestStartTask_Capabilities(t *testing.T) {
	needIsolation(t)
	d := newTestDriver(t, nil)
	cfg := newTaskConfig(t, "/bin/sh", "-c", "grep CapBnd /proc/self/status")
	cfg.User = "root"
	cfg.Config["cap_drop"] = []any{"ALL"}
	cfg.Config["cap_add"] = []any{"chown", "CAP_KILL"}
	res, out := runScript(t, d, cfg)
	must.True(t, res.Successful(), must.Sprint(res))
	// chown is bit 0, kill bit 5.
	must.Eq(t, "CapBnd:\t0000000000000021", strings.TrimSpace(out))

	for _, tc := range []struct {
		name, user string
		add        []any
		want       string
	}{
		{name: "unknown", user: "root", add: []any{"fly"}, want: `unknown capability "fly"`},
		{name: "not allowed", user: "root", add: []any{"sys_admin"}, want: "not in the plugin's allow_caps"},
		{name: "not root", add: []any{"chown"}, want: "not implemented"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newTaskConfig(t, "/bin/true")
			c.User = tc.user
			c.Config["cap_add"] = tc.add
			_, err := d.StartTask(c)
			must.ErrorIs(t, err, drivers.ErrInvalidConfig)
			must.ErrorContains(t, err, "cap_add")
			must.ErrorContains(t, err, tc.want)
		})
	}
}

// Even a root task cannot write the kernel's knobs in /proc or read its
// memory: sysrq-trigger would let it reboot the node.
func TestStartTask_ProcHardened(t *testing.T) {
	needIsolation(t)
	d := newTestDriver(t, nil)
	cfg := newTaskConfig(t, "/bin/sh", "-c", `
		{ echo 1 > /proc/sys/kernel/ns_last_pid; } 2>/dev/null && echo sys-writable || echo sys-read-only
		if [ -e /proc/sysrq-trigger ]; then
			{ echo h > /proc/sysrq-trigger; } 2>/dev/null && echo sysrq-writable || echo sysrq-read-only
		else echo sysrq-read-only; fi
		if [ -e /proc/kcore ]; then wc -c < /proc/kcore; else echo 0; fi`)
	cfg.User = "root"
	res, out := runScript(t, d, cfg)
	must.True(t, res.Successful(), must.Sprint(res))
	must.Eq(t, []string{"sys-read-only", "sysrq-read-only", "0"}, strings.Fields(out))
}
