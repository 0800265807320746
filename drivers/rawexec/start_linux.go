//go:build linux

package rawexec

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/nomad-edge/nomad/drivers/internal/cgroup"
	"github.com/nomad-edge/nomad/helper/netns"
)

// startIn starts cmd inside cg, so that the task is counted from its first
// instruction rather than joined a moment after it ran (memory it touched
// by then would stay charged to the agent's cgroup).
//
// On v2 the kernel places the child with clone3's CLONE_INTO_CGROUP. On v1
// the forking thread is moved into the task's cgroups for the fork, as v1
// places threads, and back afterwards. Should moving it back fail, its
// goroutine ends with the thread still locked, and the Go runtime retires
// such a thread rather than run other work on it.
//
// With netnsPath (bridge mode), the fork happens on a thread moved into the
// allocation's network namespace, so the task starts in it.
func startIn(cmd *exec.Cmd, cg *cgroup.Cgroups, netnsPath string) error {
	start := cmd.Start
	if netnsPath != "" {
		start = func() error { return netns.Do(netnsPath, cmd.Start) }
	}
	switch {
	case cg == nil:
		return start()
	case cg.Version == 2:
		return startIntoV2(cmd, cg, start)
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		restore, err := cg.JoinThread(unix.Gettid())
		if err != nil {
			errc <- err
			return
		}
		// On the thread in the cgroups: v1 places threads.
		nsRestored := true
		if netnsPath != "" {
			nsRestored, err = netns.DoLocked(netnsPath, cmd.Start)
		} else {
			err = cmd.Start()
		}
		restored := restore() == nil && nsRestored
		errc <- err
		if restored {
			runtime.UnlockOSThread()
		}
	}()
	return <-errc
}

func startIntoV2(cmd *exec.Cmd, cg *cgroup.Cgroups, start func() error) error {
	dir, err := os.Open(cg.Paths[0])
	if err != nil {
		return err
	}
	defer dir.Close()
	cmd.SysProcAttr.UseCgroupFD = true
	cmd.SysProcAttr.CgroupFD = int(dir.Fd())
	err = start()
	if !errors.Is(err, syscall.ENOSYS) && !errors.Is(err, syscall.E2BIG) {
		return err
	}
	// Before Linux 5.7 there is no clone3 into a cgroup: join just after.
	cmd.SysProcAttr.UseCgroupFD = false
	if err := start(); err != nil {
		return err
	}
	return cg.Join(cmd.Process.Pid)
}
