//go:build linux

package rawexec

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/internal/cgroup"
	"github.com/nomad-edge/nomad/drivers/internal/cgroup/cgrouptest"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// These tests run raw_exec's cgroup v2 code on the host's real cgroup2
// mount (see cgrouptest), which a hybrid host's driver never picks by
// itself. That mount has no cpu, memory or pids controller, so no limit and
// no memory figure can be checked on it: only placement, CPU time, kill and
// removal.

// The v2 start path forks the task straight into its cgroup with clone3's
// CLONE_INTO_CGROUP: a process that reads its own cgroup as its first act
// already finds itself there, and the fallback (join after the fork) was not
// taken.
func TestStartIntoV2_Real(t *testing.T) {
	cgrouptest.RealV2(t)
	cg, err := cgroup.Create(cgroup.CreateInput{Version: 2, Name: "a1.start"})
	must.NoError(t, err)
	var out bytes.Buffer
	cmd := exec.Command("cat", "/proc/self/cgroup")
	cmd.Stdout = &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}

	must.NoError(t, startIntoV2(cmd, &cg, cmd.Start))
	must.True(t, cmd.SysProcAttr.UseCgroupFD, must.Sprint("started with clone3 into the cgroup, not joined after"))
	must.NoError(t, cmd.Wait())
	in, err := cgrouptest.V2Line(out.String())
	must.NoError(t, err)
	must.Eq(t, cg.Paths[0], in)
	must.Positive(t, cg.Usage().CPU.Total, must.Sprint("its exec was counted"))
}

// v2CPU polls a task's stats until its CPU percent is above zero (CPU time
// only accrues in real time); memory is not looked at, as the mount has no
// memory controller.
func v2CPU(t *testing.T, d *Driver, id string) *drivers.TaskResourceUsage {
	t.Helper()
	var u *drivers.TaskResourceUsage
	wait.Poll(t, testTimeout, "task "+id+" to show CPU", func() (bool, string) {
		var err error
		u, err = d.TaskStats(id)
		must.NoError(t, err)
		return u.ResourceUsage.CpuStats.Percent > 0, fmt.Sprintf("%+v", *u.ResourceUsage.CpuStats)
	})
	return u
}

// On real cgroup v2 a raw_exec task runs in its own cgroup from its start
// and its stats come from that cgroup's cpu.stat. An agent that re-attached
// from the persisted handle reads the same cgroup, and stopping and
// destroying the task there kills a child that left the task's process
// group (only the cgroup still holds it) and removes the cgroup.
func TestStartTask_RealV2(t *testing.T) {
	cgrouptest.RealV2(t)
	v2 := func() cgroupHost { return cgroupHost{version: 2} }
	d1 := newTestDriver(t)
	d1.cgroupHost = v2
	cfg := newTaskConfig(t, "sh", "-c", `setsid sh -c 'echo $$; exec sleep 300' & `+busyLoop)
	lines := fifoLines(t, cfg.StdoutPath)
	h, err := d1.StartTask(cfg)
	must.NoError(t, err)
	var st taskState
	must.NoError(t, h.GetDriverState(&st))
	must.NotNil(t, st.Cgroups)
	dir := cgroup.For(2, cgroup.NameFor(cfg.ID), nil).Paths[0]
	must.Eq(t, []string{dir}, st.Cgroups.Paths)
	in, err := cgrouptest.ProcCgroup(st.Pid)
	must.NoError(t, err)
	must.Eq(t, dir, in)

	child, err := strconv.Atoi(nextLine(t, lines))
	must.NoError(t, err)
	must.NotEq(t, strconv.Itoa(st.Pid), procField(t, child, "NSpgid"), must.Sprint("the child left the task's group"))
	must.SliceContains(t, st.Cgroups.Pids(), child)

	u := v2CPU(t, d1, cfg.ID)
	must.SliceContains(t, u.ResourceUsage.CpuStats.Measured, drivers.MeasuredPercent)
	must.MapContainsKey(t, u.Pids, strconv.Itoa(st.Pid))

	d2 := newTestDriver(t)
	d2.cgroupHost = v2
	must.NoError(t, d2.RecoverTask(persisted(t, h)))
	v2CPU(t, d2, cfg.ID)

	must.NoError(t, d2.StopTask(cfg.ID, testTimeout, "SIGTERM"))
	waitGone(t, st.Pid)
	waitGone(t, child)
	must.NoError(t, d2.DestroyTask(cfg.ID, true))
	_, err = os.Stat(dir)
	must.True(t, os.IsNotExist(err), must.Sprintf("cgroup %s removed", dir))
}
