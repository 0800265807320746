//go:build linux

package exec

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// cgroupRoot is where the cgroup filesystems are mounted; tests point it at
// a plain directory to check what the driver writes for the version this
// host does not have.
var cgroupRoot = "/sys/fs/cgroup"

// v1Controllers are the cgroup v1 hierarchies a task joins: one per limit.
var v1Controllers = []string{"cpu", "memory", "pids"}

// Parents of the tasks' cgroups, under each hierarchy's root: where an
// operator looks for what Nomad runs.
const (
	cgroupParentV1 = "nomad"
	cgroupParentV2 = "nomad.slice"
)

// detectCgroups returns the cgroup version the host offers for the task
// limits, or 0 and why not. A unified (v2) hierarchy is used only when it is
// the host's main one: on a hybrid host (v1 controllers, an empty v2 at
// /sys/fs/cgroup/unified) the controllers live in v1.
func detectCgroups() (int, string) {
	if b, err := os.ReadFile(filepath.Join(cgroupRoot, "cgroup.controllers")); err == nil {
		have := strings.Fields(string(b))
		for _, c := range v1Controllers {
			if !slices.Contains(have, c) {
				return 0, fmt.Sprintf("cgroup v2 controller %q is not available", c)
			}
		}
		return 2, ""
	}
	for _, c := range v1Controllers {
		if _, err := os.Stat(filepath.Join(cgroupRoot, c, "cgroup.procs")); err != nil {
			return 0, fmt.Sprintf("cgroup v1 controller %q is not mounted at %s", c, filepath.Join(cgroupRoot, c))
		}
	}
	return 1, ""
}

// limits are what a task's cgroup enforces. Zero means unlimited.
type limits struct {
	CPUShares int
	MemSoftMB int
	MemHardMB int
	Pids      int
}

// cgroups are a task's cgroup directories: one per controller on v1, one on
// v2. It is persisted in the task handle, so that a new agent can clean up
// after a task it recovered.
type cgroups struct {
	Version int      `json:"version"`
	Paths   []string `json:"paths"`
}

// cgroupsFor returns where the cgroups of the task called name are.
func cgroupsFor(version int, name string) cgroups {
	cg := cgroups{Version: version}
	if version == 2 {
		cg.Paths = []string{filepath.Join(cgroupRoot, cgroupParentV2, name)}
		return cg
	}
	for _, c := range v1Controllers {
		cg.Paths = append(cg.Paths, filepath.Join(cgroupRoot, c, cgroupParentV1, name))
	}
	return cg
}

// createCgroups makes the task's cgroups and sets their limits.
func createCgroups(version int, name string, l limits) (cgroups, error) {
	cg := cgroupsFor(version, name)
	if version == 2 {
		if err := enableV2Controllers(); err != nil {
			return cg, err
		}
	}
	for _, p := range cg.Paths {
		if err := os.MkdirAll(p, 0o755); err != nil {
			return cg, fmt.Errorf("creating cgroup: %w", err)
		}
	}
	if err := cg.setLimits(l); err != nil {
		_ = cg.destroy()
		return cg, err
	}
	return cg, nil
}

// enableV2Controllers lets the parent's children use the controllers: v2
// only offers a child what its parent's subtree_control names.
func enableV2Controllers() error {
	parent := filepath.Join(cgroupRoot, cgroupParentV2)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("creating cgroup %s: %w", parent, err)
	}
	for _, dir := range []string{cgroupRoot, parent} {
		if err := writeFile(filepath.Join(dir, "cgroup.subtree_control"), "+cpu +memory +pids"); err != nil {
			return err
		}
	}
	return nil
}

// dir returns the task's directory for a v1 controller, or its only one.
func (c cgroups) dir(controller string) string {
	if c.Version == 2 {
		return c.Paths[0]
	}
	for _, p := range c.Paths {
		if filepath.Base(filepath.Dir(filepath.Dir(p))) == controller {
			return p
		}
	}
	return ""
}

func (c cgroups) setLimits(l limits) error {
	const mb = 1 << 20
	hard, soft := l.MemHardMB, l.MemSoftMB
	if hard == 0 {
		hard = soft
	}
	type setting struct{ controller, file, value string }
	var set []setting
	if c.Version == 2 {
		if hard > 0 {
			set = append(set, setting{"memory", "memory.max", strconv.Itoa(hard * mb)})
			// A task over its limit is killed, not swapped out: the
			// limit must mean what the scheduler reserved.
			set = append(set, setting{"memory", "memory.swap.max?", "0"})
		}
		if soft > 0 && soft < hard {
			set = append(set, setting{"memory", "memory.low", strconv.Itoa(soft * mb)})
		}
		if l.CPUShares > 0 {
			set = append(set, setting{"cpu", "cpu.weight", strconv.Itoa(sharesToWeight(l.CPUShares))})
		}
	} else {
		if hard > 0 {
			set = append(set, setting{"memory", "memory.limit_in_bytes", strconv.Itoa(hard * mb)})
			set = append(set, setting{"memory", "memory.memsw.limit_in_bytes?", strconv.Itoa(hard * mb)})
			set = append(set, setting{"memory", "memory.swappiness?", "0"})
		}
		if soft > 0 && soft < hard {
			set = append(set, setting{"memory", "memory.soft_limit_in_bytes", strconv.Itoa(soft * mb)})
		}
		if l.CPUShares > 0 {
			set = append(set, setting{"cpu", "cpu.shares", strconv.Itoa(max(2, l.CPUShares))})
		}
	}
	if l.Pids > 0 {
		set = append(set, setting{"pids", "pids.max", strconv.Itoa(l.Pids)})
	}
	for _, s := range set {
		// A trailing "?" marks a file that kernels may lack (no swap
		// accounting): best effort.
		file, optional := strings.CutSuffix(s.file, "?")
		err := writeFile(filepath.Join(c.dir(s.controller), file), s.value)
		if err != nil && !(optional && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.EINVAL))) {
			return fmt.Errorf("setting cgroup limit: %w", err)
		}
	}
	return nil
}

// sharesToWeight maps v1 cpu.shares [2, 262144] onto v2 cpu.weight
// [1, 10000], linearly, as container runtimes do.
func sharesToWeight(shares int) int {
	shares = min(max(shares, 2), 262144)
	return 1 + ((shares-2)*9999)/262142
}

// join moves pid into the task's cgroups.
func (c cgroups) join(pid int) error {
	for _, p := range c.Paths {
		if err := writeFile(filepath.Join(p, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
			return fmt.Errorf("joining cgroup: %w", err)
		}
	}
	return nil
}

// oomKilled reports whether the kernel's OOM killer killed a process of the
// cgroup for exceeding its memory limit.
func (c cgroups) oomKilled() bool {
	dir := c.dir("memory")
	file, key := "memory.oom_control", "oom_kill"
	if c.Version == 2 {
		file = "memory.events"
	}
	b, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == key {
			n, _ := strconv.Atoi(f[1])
			return n > 0
		}
	}
	return false
}

// pids returns the processes in the task's cgroups.
func (c cgroups) pids() []int {
	var out []int
	for _, p := range c.Paths {
		b, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil && !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out
}

// killAll sends SIGKILL to every process left in the cgroups, which is how a
// task run with pid_mode = "host" loses the children it left behind.
func (c cgroups) killAll() {
	for _, pid := range c.pids() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// destroy removes the cgroups. A cgroup whose processes are still exiting
// refuses with EBUSY; the caller kills them first.
func (c cgroups) destroy() error {
	var errs []error
	for _, p := range c.Paths {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing cgroup %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// valid refuses persisted paths outside the driver's parents, so that a
// corrupt handle cannot make the agent kill or remove someone else's cgroup.
func (c cgroups) valid() bool {
	if len(c.Paths) == 0 {
		return false
	}
	for _, p := range c.Paths {
		clean := filepath.Clean(p)
		parent := filepath.Base(filepath.Dir(clean))
		if clean != p || !strings.HasPrefix(p, cgroupRoot+"/") || (parent != cgroupParentV1 && parent != cgroupParentV2) {
			return false
		}
	}
	return true
}

func writeFile(path, value string) error {
	return os.WriteFile(path, []byte(value), 0o644)
}
