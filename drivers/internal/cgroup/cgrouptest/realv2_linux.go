//go:build linux

// Package cgrouptest points the cgroup package at a real cgroup v2
// hierarchy for tests: on a hybrid host (v1 controllers, a cgroup2 mount at
// /sys/fs/cgroup/unified with no controllers of its own) the driver never
// uses v2, and its v2 start, stats, kill and removal code would otherwise
// only meet a fake cgroupfs.
package cgrouptest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nomad-edge/nomad/drivers/internal/cgroup"
	"github.com/nomad-edge/nomad/helper/clock"
)

// UnifiedMount is where a hybrid host mounts its cgroup2 hierarchy.
const UnifiedMount = "/sys/fs/cgroup/unified"

// removeWait bounds how long cleanup waits for the kernel to let go of a
// cgroup whose processes were killed.
const removeWait = 5 * time.Second

// RealV2 makes a directory of its own for the test on the real cgroup2
// mount and points cgroup.Root at it, with nothing delegated (the mount
// offers no cpu, memory or pids controller to delegate). Everything below
// it is killed and removed when the test ends, passed or failed. It skips
// the test when not root or when UnifiedMount is not a cgroup2 mount.
func RealV2(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: making cgroups on the real cgroup2 mount")
	}
	var st unix.Statfs_t
	if err := unix.Statfs(UnifiedMount, &st); err != nil || st.Type != unix.CGROUP2_SUPER_MAGIC {
		t.Skipf("%s is not a cgroup2 mount: no real cgroup v2 to test on", UnifiedMount)
	}
	root := filepath.Join(UnifiedMount, fmt.Sprintf("nomad-edge-test-%d-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", ".")))
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatalf("making the test's cgroup: %v", err)
	}
	oldRoot, oldDelegate := cgroup.Root, cgroup.V2Delegate
	cgroup.Root, cgroup.V2Delegate = root, ""
	t.Cleanup(func() {
		cgroup.Root, cgroup.V2Delegate = oldRoot, oldDelegate
		if err := removeTree(root); err != nil {
			t.Errorf("cleaning up the test's cgroups: %v", err)
		}
	})
	return root
}

// removeTree kills what is left in every cgroup below root and removes them,
// children first: rmdir refuses a cgroup that has children. It kills by
// itself, not with the package's KillAll, so that a broken KillAll fails its
// test without leaking processes.
func removeTree(root string) error {
	var dirs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, path)
		}
		return err
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	slices.Reverse(dirs)
	var errs []error
	for _, dir := range dirs {
		killIn(dir)
		cg := cgroup.Cgroups{Version: 2, Paths: []string{dir}}
		errs = append(errs, cg.DestroyWait(clock.Real(), removeWait))
	}
	return errors.Join(errs...)
}

// killIn sends SIGKILL to every process in the cgroup dir, through
// cgroup.kill where the kernel has it (5.14 and later), which also reaches
// processes forked meanwhile.
func killIn(dir string) {
	if os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0o644) == nil {
		return
	}
	b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil && pid != os.Getpid() {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
	}
}

// ProcCgroup is the directory on UnifiedMount that pid is in, from the
// "0::" line of /proc/<pid>/cgroup.
func ProcCgroup(pid int) (string, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cgroup"))
	if err != nil {
		return "", err
	}
	return V2Line(string(b))
}

// V2Line turns the "0::" line of a /proc/<pid>/cgroup listing into a
// directory on UnifiedMount.
func V2Line(listing string) (string, error) {
	for _, line := range strings.Split(listing, "\n") {
		if rel, ok := strings.CutPrefix(line, "0::"); ok {
			return filepath.Join(UnifiedMount, rel), nil
		}
	}
	return "", fmt.Errorf("no 0:: line in %q", listing)
}
