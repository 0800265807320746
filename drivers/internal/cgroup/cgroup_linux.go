//go:build linux

package cgroup

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
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nomad-edge/nomad/helper/clock"
)

// Supported reports whether this platform has cgroups.
const Supported = true

// Root is where the cgroup filesystems are mounted; tests point it at a
// plain directory to check what is written for the version this host does
// not have.
var Root = "/sys/fs/cgroup"

// V2Delegate is what Create enables in cgroup.subtree_control of the v2
// root and of nomad.slice, so that the tasks' cgroups get the controllers
// their limits need. Tests on a v2 mount that offers none of them (a hybrid
// host's /sys/fs/cgroup/unified) set it empty: nothing is written then.
var V2Delegate = "+cpu +memory +pids"

// Parents of the tasks' cgroups, under each hierarchy's root: where an
// operator looks for what Nomad runs.
const (
	ParentV1 = "nomad"
	ParentV2 = "nomad.slice"
)

// Detect returns the cgroup version the host offers with the controllers
// named, or 0 and why not. A unified (v2) hierarchy is used only when it is
// the host's main one: on a hybrid host (v1 controllers, an empty v2 at
// /sys/fs/cgroup/unified) the controllers live in v1.
func Detect(controllers []string) (int, string) {
	if b, err := os.ReadFile(filepath.Join(Root, "cgroup.controllers")); err == nil {
		have := strings.Fields(string(b))
		for _, c := range controllers {
			if !slices.Contains(have, c) {
				return 0, fmt.Sprintf("cgroup v2 controller %q is not available", c)
			}
		}
		return 2, ""
	}
	for _, c := range controllers {
		if !MountedV1(c) {
			return 0, fmt.Sprintf("cgroup v1 controller %q is not mounted at %s", c, filepath.Join(Root, c))
		}
	}
	return 1, ""
}

// MountedV1 reports whether the v1 hierarchy of controller is mounted.
func MountedV1(controller string) bool {
	_, err := os.Stat(filepath.Join(Root, controller, "cgroup.procs"))
	return err == nil
}

// NameFor turns a task ID, "<allocID>/<task>", into one path element.
func NameFor(taskID string) string {
	return strings.ReplaceAll(taskID, "/", ".")
}

// Limits are what a task's cgroup enforces. Zero means unlimited.
type Limits struct {
	CPUShares int
	MemSoftMB int
	MemHardMB int
	Pids      int
}

// Cgroups are a task's cgroup directories: one per v1 controller, or one on
// v2. They are persisted in the task handle, so that a new agent can read
// and clean up after a task it recovered.
type Cgroups struct {
	Version int      `json:"version"`
	Paths   []string `json:"paths"`
	// Shared marks a cgroup the task was put in but does not own (a
	// raw_exec cgroup_v2_override): it is never killed nor removed.
	Shared bool `json:"shared,omitempty"`
}

// For returns where the cgroups of the task called name are, one per v1
// controller named.
func For(version int, name string, controllers []string) Cgroups {
	cg := Cgroups{Version: version}
	if version == 2 {
		cg.Paths = []string{filepath.Join(Root, ParentV2, name)}
		return cg
	}
	for _, c := range controllers {
		cg.Paths = append(cg.Paths, filepath.Join(Root, c, ParentV1, name))
	}
	return cg
}

// CreateInput says which cgroups Create makes.
type CreateInput struct {
	Version int
	Name    string
	// Controllers are the v1 hierarchies to join; v2 has one.
	Controllers []string
	Limits      Limits
}

// Create makes the task's cgroups and sets their limits.
func Create(in CreateInput) (Cgroups, error) {
	cg := For(in.Version, in.Name, in.Controllers)
	if in.Version == 2 {
		if err := enableV2Controllers(); err != nil {
			return cg, err
		}
	}
	for _, p := range cg.Paths {
		if err := os.MkdirAll(p, 0o755); err != nil {
			return cg, fmt.Errorf("creating cgroup: %w", err)
		}
	}
	if err := cg.setLimits(in.Limits); err != nil {
		_ = cg.Destroy()
		return cg, err
	}
	return cg, nil
}

// SharedV2 names an existing v2 cgroup the task is to join without owning
// it. path is absolute or relative to Root, and must be below Root.
func SharedV2(path string) (Cgroups, error) {
	if !filepath.IsAbs(path) {
		path = filepath.Join(Root, path)
	}
	path = filepath.Clean(path)
	if !strings.HasPrefix(path, Root+"/") {
		return Cgroups{}, fmt.Errorf("cgroup %q is not below %s", path, Root)
	}
	if _, err := os.Stat(filepath.Join(path, "cgroup.procs")); err != nil {
		return Cgroups{}, fmt.Errorf("cgroup %q: %w", path, err)
	}
	return Cgroups{Version: 2, Paths: []string{path}, Shared: true}, nil
}

// enableV2Controllers lets the parent's children use the controllers: v2
// only offers a child what its parent's subtree_control names.
func enableV2Controllers() error {
	parent := filepath.Join(Root, ParentV2)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("creating cgroup %s: %w", parent, err)
	}
	if V2Delegate == "" {
		return nil
	}
	for _, dir := range []string{Root, parent} {
		if err := writeFile(filepath.Join(dir, "cgroup.subtree_control"), V2Delegate); err != nil {
			return err
		}
	}
	return nil
}

// Dir returns the task's directory for a v1 controller, or its only one.
func (c Cgroups) Dir(controller string) string {
	if c.Version == 2 {
		if len(c.Paths) == 0 {
			return ""
		}
		return c.Paths[0]
	}
	for _, p := range c.Paths {
		if filepath.Base(filepath.Dir(filepath.Dir(p))) == controller {
			return p
		}
	}
	return ""
}

func (c Cgroups) setLimits(l Limits) error {
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
			set = append(set, setting{"cpu", "cpu.weight", strconv.Itoa(SharesToWeight(l.CPUShares))})
		}
	} else {
		// Charges move with a process that joins after it ran (raw_exec
		// joins its task right after the fork): its memory so far would
		// otherwise stay the parent cgroup's. 3 = anonymous and file pages.
		set = append(set, setting{"memory", "memory.move_charge_at_immigrate?", "3"})
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
		dir := c.Dir(s.controller)
		if dir == "" {
			if optional {
				continue
			}
			return fmt.Errorf("setting cgroup limit %s: the task has no %s cgroup", file, s.controller)
		}
		err := writeFile(filepath.Join(dir, file), s.value)
		if err != nil && !(optional && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.EINVAL))) {
			return fmt.Errorf("setting cgroup limit: %w", err)
		}
	}
	return nil
}

// SharesToWeight maps v1 cpu.shares [2, 262144] onto v2 cpu.weight
// [1, 10000], linearly, as container runtimes do.
func SharesToWeight(shares int) int {
	shares = min(max(shares, 2), 262144)
	return 1 + ((shares-2)*9999)/262142
}

// Join moves pid into the task's cgroups.
func (c Cgroups) Join(pid int) error {
	for _, p := range c.Paths {
		if err := writeFile(filepath.Join(p, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
			return fmt.Errorf("joining cgroup: %w", err)
		}
	}
	return nil
}

// JoinThread moves one thread of the calling process into the task's v1
// cgroups (v1 places threads, not processes): a process it forks starts
// there, so that everything the task does is counted from its first
// instruction. restore moves the thread back where it was.
func (c Cgroups) JoinThread(tid int) (restore func() error, err error) {
	if c.Version != 1 {
		return nil, fmt.Errorf("joining cgroup: only v1 places threads")
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/cgroup", tid))
	if err != nil {
		return nil, fmt.Errorf("joining cgroup: %w", err)
	}
	var back []string
	for _, p := range c.Paths {
		controller := filepath.Base(filepath.Dir(filepath.Dir(p)))
		orig, ok := threadCgroup(string(b), controller)
		if !ok {
			return nil, fmt.Errorf("joining cgroup: the thread is in no %s cgroup", controller)
		}
		back = append(back, filepath.Join(Root, controller, orig))
	}
	restore = func() error {
		var errs []error
		for _, dir := range back {
			errs = append(errs, writeFile(filepath.Join(dir, "tasks"), strconv.Itoa(tid)))
		}
		return errors.Join(errs...)
	}
	for _, p := range c.Paths {
		if err := writeFile(filepath.Join(p, "tasks"), strconv.Itoa(tid)); err != nil {
			return nil, errors.Join(fmt.Errorf("joining cgroup: %w", err), restore())
		}
	}
	return restore, nil
}

// threadCgroup finds controller's path in a /proc/<pid>/cgroup listing
// ("4:memory:/user.slice", "3:cpu,cpuacct:/").
func threadCgroup(listing, controller string) (string, bool) {
	for _, line := range strings.Split(listing, "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) == 3 && slices.Contains(strings.Split(f[1], ","), controller) {
			return f[2], true
		}
	}
	return "", false
}

// OOMKilled reports whether the kernel's OOM killer killed a process of the
// cgroup for exceeding its memory limit.
func (c Cgroups) OOMKilled() bool {
	file := "memory.oom_control"
	if c.Version == 2 {
		file = "memory.events"
	}
	return readKeyed(filepath.Join(c.Dir("memory"), file))["oom_kill"] > 0
}

// Pids returns the processes in the task's cgroups. The agent itself is
// never one: on v1 it is listed while the thread that forked a raw_exec task
// into the cgroup is still exiting, and must not be killed with the task.
func (c Cgroups) Pids() []int {
	self := os.Getpid()
	var out []int
	for _, p := range c.Paths {
		b, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil && n != self && !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out
}

// KillAll sends SIGKILL to every process left in the cgroups, which is how a
// task loses the children it left behind outside its process group. A
// shared cgroup is left alone: its other processes are not the task's.
func (c Cgroups) KillAll() {
	if c.Shared {
		return
	}
	for _, pid := range c.Pids() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// Destroy removes the cgroups (not a shared one). A cgroup whose processes
// are still exiting refuses with EBUSY; the caller kills them first.
func (c Cgroups) Destroy() error {
	if c.Shared {
		return nil
	}
	var errs []error
	for _, p := range c.Paths {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing cgroup %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// DestroyWait removes the cgroups once the kernel has finished tearing down
// their last processes, which it does asynchronously after they were
// killed: rmdir fails with EBUSY until then, for at most wait.
func (c Cgroups) DestroyWait(clk clock.Clock, wait time.Duration) error {
	deadline := clk.Now().Add(wait)
	for {
		err := c.Destroy()
		if err == nil || !errors.Is(err, syscall.EBUSY) || clk.Now().After(deadline) {
			return err
		}
		clock.Sleep(clk, 10*time.Millisecond, nil)
	}
}

// Remove kills what is left in the cgroups and removes them, waiting at
// most wait for the kernel to let go of them. What is still listed at each
// refusal is killed again: a process that was forking when the first
// kill came leaves a child the list did not show yet, which would
// otherwise hold the cgroup (and itself stay alive) for good.
func (c Cgroups) Remove(clk clock.Clock, wait time.Duration) error {
	deadline := clk.Now().Add(wait)
	for {
		c.KillAll()
		err := c.Destroy()
		if err == nil || !errors.Is(err, syscall.EBUSY) || clk.Now().After(deadline) {
			return err
		}
		clock.Sleep(clk, 10*time.Millisecond, nil)
	}
}

// RemoveIfEmpty removes the cgroups of a task that ended while no agent
// watched it: nobody else ever will. Cgroups that still hold processes are
// left alone (rmdir refuses them), so that a handle that no longer matches
// its process never makes the agent kill anything.
func (c Cgroups) RemoveIfEmpty(logger hclog.Logger) {
	if len(c.Pids()) > 0 {
		logger.Info("leaving the cgroup of a task that is gone: it still holds processes", "cgroups", c.Paths)
		return
	}
	if err := c.Destroy(); err != nil {
		logger.Warn("failed to remove the cgroup of a task that is gone", "error", err)
	}
}

// Valid refuses persisted paths outside the drivers' parents (or, for a
// shared cgroup, outside Root), so that a corrupt handle cannot make the
// agent kill or remove someone else's cgroup.
func (c Cgroups) Valid() bool {
	if len(c.Paths) == 0 {
		return false
	}
	for _, p := range c.Paths {
		clean := filepath.Clean(p)
		if clean != p || !strings.HasPrefix(p, Root+"/") {
			return false
		}
		parent := filepath.Base(filepath.Dir(clean))
		if !c.Shared && parent != ParentV1 && parent != ParentV2 {
			return false
		}
	}
	return true
}

// readKeyed reads a file of "key value" lines (memory.stat, cpu.stat);
// a missing file reads as empty.
func readKeyed(path string) map[string]uint64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	out := map[string]uint64{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		if n, err := strconv.ParseUint(f[1], 10, 64); err == nil {
			out[f[0]] = n
		}
	}
	return out
}

// readUint reads a file holding one number; ok is false when it is missing
// or holds something else ("max").
func readUint(path string) (uint64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	return n, err == nil
}

func writeFile(path, value string) error {
	return os.WriteFile(path, []byte(value), 0o644)
}
