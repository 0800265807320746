//go:build linux

package proc

import (
	"bytes"
	"os"
	"os/signal"
	"strconv"
	"syscall"
)

// inheritableSignals are the signals an agent may have been started with
// ignored: nohup ignores SIGHUP, a non-interactive shell's `&` ignores
// SIGINT and SIGQUIT, and supervisors sometimes pass on more. An ignored
// signal stays ignored across exec, so every task would inherit it: a
// shell's `trap ... HUP` would then do nothing (POSIX shells may not trap
// a signal ignored on entry), and `nomad alloc signal -s HUP` would reach
// a task that cannot hear it.
var inheritableSignals = []syscall.Signal{
	syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM,
	syscall.SIGUSR1, syscall.SIGUSR2,
}

// ignoredSink receives the signals the agent was found ignoring. Nothing
// reads it, and signal.Notify never blocks on a full channel: the agent
// still ignores them in effect.
var ignoredSink = make(chan os.Signal, 1)

// DefaultSignalsForChildren makes sure a task starts with the default
// disposition of every signal in inheritableSignals, whatever the agent
// inherited: a signal the process ignores is caught instead (and
// dropped), and the kernel resets a caught signal to its default at exec.
// The drivers call it before every start.
//
// The kernel's word (SigIgn in /proc/self/status) decides, not
// signal.Ignored: once a signal ignored at start has been notified and
// the notification stopped (the agent command does so around its run),
// the runtime puts SIG_IGN back but signal.Ignored reports false.
func DefaultSignalsForChildren() {
	ignored, ok := ignoredSignals()
	for _, sig := range inheritableSignals {
		if (ok && ignored&(1<<(uint(sig)-1)) != 0) || signal.Ignored(sig) {
			signal.Notify(ignoredSink, sig)
		}
	}
}

// ignoredSignals returns the process's SigIgn mask from /proc/self/status.
func ignoredSignals() (uint64, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for line := range bytes.Lines(b) {
		if rest, found := bytes.CutPrefix(line, []byte("SigIgn:")); found {
			mask, err := strconv.ParseUint(string(bytes.TrimSpace(rest)), 16, 64)
			return mask, err == nil
		}
	}
	return 0, false
}
