//go:build linux

package cgroup_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/drivers/internal/cgroup"
	"github.com/nomad-edge/nomad/drivers/internal/cgroup/cgrouptest"
	"github.com/nomad-edge/nomad/helper/clock"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// These tests run on the host's real cgroup2 mount (see cgrouptest). It
// offers no cpu, memory or pids controller here, so memory.max, cpu.weight
// and pids.max cannot be tested: only what every v2 cgroup has (cgroup.procs,
// cpu.stat, rmdir semantics) is.

const testTimeout = 10 * time.Second

// startBusy starts a shell that keeps a core busy and leaves a sleeping
// child behind, outside the shell's control once it is killed; the test
// kills whatever is left when it ends.
func startBusy(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", "-c", "sleep 300 & while :; do :; done")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	must.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil { // not reaped: its pid is still its own
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	})
	return cmd
}

// waitCmd waits for cmd to exit, for at most testTimeout: a broken kill
// must fail the test, not hang it.
func waitCmd(t *testing.T, cmd *exec.Cmd) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(testTimeout):
		t.Fatalf("process %d still running after %s", cmd.Process.Pid, testTimeout)
		return nil
	}
}

// usageAbove polls until the cgroup's CPU time is above floor: CPU time
// only accrues in real time.
func usageAbove(t *testing.T, cg cgroup.Cgroups, floor uint64) cgroup.CPUTime {
	t.Helper()
	var u cgroup.Usage
	wait.Poll(t, testTimeout, "cgroup "+cg.Paths[0]+" to use CPU", func() (bool, string) {
		u = cg.Usage()
		return u.CPU.Total > floor, fmt.Sprintf("CPU time %d ns", u.CPU.Total)
	})
	return u.CPU
}

// On real cgroup v2, Create makes a kernel cgroup under nomad.slice, a
// process joined to it is listed there by the kernel, cpu.stat counts its
// CPU time, KillAll kills it and the child it left, and the cgroup can then
// be removed.
func TestRealV2_Lifecycle(t *testing.T) {
	root := cgrouptest.RealV2(t)
	cg, err := cgroup.Create(cgroup.CreateInput{Version: 2, Name: "a1.busy"})
	must.NoError(t, err)
	dir := filepath.Join(root, cgroup.ParentV2, "a1.busy")
	must.Eq(t, []string{dir}, cg.Paths)
	must.True(t, cg.Valid())
	_, err = os.Stat(filepath.Join(dir, "cpu.stat"))
	must.NoError(t, err, must.Sprint("the kernel made the cgroup's files"))
	must.Eq(t, uint64(0), cg.Usage().CPU.Total, must.Sprint("nothing ran in it yet"))

	cmd := startBusy(t)
	must.NoError(t, cg.Join(cmd.Process.Pid))
	in, err := cgrouptest.ProcCgroup(cmd.Process.Pid)
	must.NoError(t, err)
	must.Eq(t, dir, in)
	must.SliceContains(t, cg.Pids(), cmd.Process.Pid)

	first := usageAbove(t, cg, 0)
	must.Positive(t, first.User+first.System)
	second := usageAbove(t, cg, first.Total)
	must.Greater(t, first.Total, second.Total)

	// The error is EBUSY while processes are in it: that is what makes the
	// driver kill before it removes.
	err = cg.Destroy()
	must.True(t, errors.Is(err, syscall.EBUSY), must.Sprintf("rmdir of a populated cgroup: %v", err))

	cg.KillAll()
	err = waitCmd(t, cmd)
	var ee *exec.ExitError
	must.ErrorAs[*exec.ExitError](t, err, &ee)
	must.Eq(t, syscall.SIGKILL, ee.Sys().(syscall.WaitStatus).Signal())
	must.NoError(t, cg.DestroyWait(clock.Real(), testTimeout), must.Sprint("the sleeping child was killed too"))
	_, err = os.Stat(dir)
	must.True(t, os.IsNotExist(err), must.Sprintf("cgroup %s removed", dir))
}

// A handle persisted by one agent and read by the next names the same
// cgroup: the new value reads its CPU time and removes it, killing what is
// in it.
func TestRealV2_Reattach(t *testing.T) {
	cgrouptest.RealV2(t)
	orig, err := cgroup.Create(cgroup.CreateInput{Version: 2, Name: "a1.reattach"})
	must.NoError(t, err)
	cmd := startBusy(t)
	must.NoError(t, orig.Join(cmd.Process.Pid))

	b, err := json.Marshal(orig)
	must.NoError(t, err)
	var cg cgroup.Cgroups
	must.NoError(t, json.Unmarshal(b, &cg))
	must.True(t, cg.Valid())
	must.Eq(t, orig.Paths, cg.Paths)
	must.Positive(t, usageAbove(t, cg, 0).Total)
	must.SliceContains(t, cg.Pids(), cmd.Process.Pid)

	must.NoError(t, cg.Remove(clock.Real(), testTimeout))
	must.Error(t, waitCmd(t, cmd))
	_, err = os.Stat(cg.Paths[0])
	must.True(t, os.IsNotExist(err), must.Sprintf("cgroup %s removed", cg.Paths[0]))
}

// Remove of a task that keeps forking kills the children born after its
// first kill too, and removes the cgroup: a child the first list did not
// show used to hold the cgroup (EBUSY until the wait ran out) and stay
// alive, a process leaked by a stopped task. The test stands in for the
// forking task by joining a new process to the cgroup every 20 ms for
// the first half second of the Remove.
func TestRealV2_RemoveKillsForkingTask(t *testing.T) {
	cgrouptest.RealV2(t)
	cg, err := cgroup.Create(cgroup.CreateInput{Version: 2, Name: "a1.forks"})
	must.NoError(t, err)
	var mu sync.Mutex
	var joined []*exec.Cmd
	joinOne := func() bool {
		c := exec.Command("sleep", "300")
		if c.Start() != nil {
			return false
		}
		if cg.Join(c.Process.Pid) != nil { // the cgroup is gone: Remove is done
			_ = c.Process.Kill()
			_ = c.Wait()
			return false
		}
		mu.Lock()
		joined = append(joined, c)
		mu.Unlock()
		return true
	}
	must.True(t, joinOne(), must.Sprint("the task's first process"))
	done := make(chan struct{})
	go func() {
		defer close(done)
		until := time.Now().Add(500 * time.Millisecond)
		for time.Now().Before(until) && joinOne() {
			time.Sleep(20 * time.Millisecond) // the forker's pace, not a wait for logic
		}
	}()

	must.NoError(t, cg.Remove(clock.Real(), 2*time.Second))
	<-done
	_, err = os.Stat(cg.Paths[0])
	must.True(t, os.IsNotExist(err), must.Sprintf("cgroup %s removed", cg.Paths[0]))
	mu.Lock()
	defer mu.Unlock()
	for _, c := range joined {
		err := waitCmd(t, c)
		var ee *exec.ExitError
		must.ErrorAs[*exec.ExitError](t, err, &ee, must.Sprintf("process %d, joined during the Remove, was killed", c.Process.Pid))
	}
}
