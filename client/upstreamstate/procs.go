package upstreamstate

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The processes an upstream client leaves running beside a raw_exec or
// exec task when its agent stops (observed on 1.6.5):
//
//	<nomad> executor {"LogFile":"<alloc_dir>/<alloc>/<task>/executor.out",...}
//	    the task's parent, which started it and waits for it
//	<nomad> logmon
//	    reads the task's log FIFOs, <alloc_dir>/<alloc>/alloc/logs/.<task>.stdout.fifo
//	    and .stderr.fifo, into <task>.stdout.N and <task>.stderr.N
//
// A docker task has no executor: its container is named "<task>-<alloc>"
// and labelled com.hashicorp.nomad.alloc_id, and beside its logmon a
// "<nomad> docker_logger" streams the container's output from the engine
// into the FIFOs. The container outlives both.
//
// The task leads a process group of its own and carries NOMAD_ALLOC_ID and
// NOMAD_TASK_NAME in its environment. It outlives both helpers: killing the
// executor reparents it, and a FIFO with another reader open keeps its
// writes from failing when logmon goes.

// HelperKind names an upstream helper process.
type HelperKind string

const (
	Executor HelperKind = "executor"
	Logmon   HelperKind = "logmon"
	// DockerLogger copies a docker task's output from the engine into
	// its log FIFOs (docker tasks have no executor).
	DockerLogger HelperKind = "docker_logger"
)

// Helper is an upstream helper process of a task.
type Helper struct {
	Kind HelperKind
	PID  int
}

// LogFIFOs are the FIFOs a task of allocID writes its output into, under
// the client's alloc_dir (upstream's layout, which is also ours).
func LogFIFOs(allocDir, allocID, task string) []string {
	logs := filepath.Join(allocDir, allocID, "alloc", "logs")
	return []string{
		filepath.Join(logs, "."+task+".stdout.fifo"),
		filepath.Join(logs, "."+task+".stderr.fifo"),
	}
}

// TaskProcess returns the task's process if it still runs: the PID its
// handle names, still the leader of its process group and with the
// allocation's and task's names in its environment (a PID the kernel gave
// to another process since is not taken for it).
func TaskProcess(allocID string, t Task) (int, bool) {
	if t.Handle == nil || t.Handle.PID <= 1 {
		return 0, false
	}
	pid := t.Handle.PID
	if pgid, err := unix.Getpgid(pid); err != nil || pgid != pid {
		return 0, false
	}
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return 0, false
	}
	vars := bytes.Split(env, []byte{0})
	for _, want := range []string{"NOMAD_ALLOC_ID=" + allocID, "NOMAD_TASK_NAME=" + t.Name} {
		found := false
		for _, v := range vars {
			if string(v) == want {
				found = true
				break
			}
		}
		if !found {
			return 0, false
		}
	}
	return pid, true
}

// Helpers returns the upstream helper processes still running for the
// task: its executor (the PID its handle names, checked by its command
// line, which names the task's directory) and any logmon reading its log
// FIFOs or docker_logger writing them (found in /proc).
func Helpers(allocDir, allocID string, t Task) []Helper {
	var out []Helper
	if t.Handle != nil && t.Handle.ExecutorPID > 1 {
		args := cmdline(t.Handle.ExecutorPID)
		mark := string(filepath.Separator) + filepath.Join(allocID, t.Name, "executor.out")
		if len(args) >= 3 && args[1] == string(Executor) && strings.Contains(args[2], mark) {
			out = append(out, Helper{Kind: Executor, PID: t.Handle.ExecutorPID})
		}
	}
	fifos := LogFIFOs(allocDir, allocID, t.Name)
	for i, f := range fifos {
		// /proc shows what a descriptor opened with links resolved.
		if real, err := filepath.EvalSymlinks(f); err == nil {
			fifos[i] = real
		}
	}
	for _, kind := range []HelperKind{Logmon, DockerLogger} {
		for _, pid := range holders(kind, func(target string) bool { return slices.Contains(fifos, target) }) {
			out = append(out, Helper{Kind: kind, PID: pid})
		}
	}
	return out
}

// Logmons returns the upstream logmon processes that hold a log FIFO of
// any task of allocID (the FIFOs removed with the allocation's directory
// included).
func Logmons(allocDir, allocID string) []int {
	logs := filepath.Join(allocDir, allocID, "alloc", "logs")
	if real, err := filepath.EvalSymlinks(logs); err == nil {
		logs = real
	}
	logs += string(filepath.Separator)
	return holders(Logmon, func(target string) bool {
		target = strings.TrimSuffix(target, " (deleted)")
		return strings.HasPrefix(target, logs) && strings.HasSuffix(target, ".fifo")
	})
}

// holders returns the processes named "<nomad> <kind>" with an open file
// that match accepts.
func holders(kind HelperKind, match func(target string) bool) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 1 || pid == self {
			continue
		}
		if args := cmdline(pid); len(args) != 2 || args[1] != string(kind) {
			continue
		}
		if holds(pid, match) {
			out = append(out, pid)
		}
	}
	return out
}

// HoldsAny reports whether process pid has one of paths open.
func HoldsAny(pid int, paths []string) bool {
	return holds(pid, func(target string) bool { return slices.Contains(paths, target) })
}

// holds reports whether process pid has a file open that match accepts.
func holds(pid int, match func(target string) bool) bool {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join(dir, fd.Name()))
		if err != nil {
			continue
		}
		if match(target) {
			return true
		}
	}
	return false
}

// cmdline is a process's arguments, nil when it cannot be read.
func cmdline(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
}
