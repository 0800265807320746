//go:build unix

package proc

import (
	"os"
	"os/signal"
	"syscall"
)

// inheritableSignals are the signals an agent may have been started with
// ignored: nohup ignores SIGHUP, a non-interactive shell's `&` ignores
// SIGINT and SIGQUIT, and supervisors sometimes pass on more. An ignored
// signal stays ignored across exec, so every task would inherit it: a
// shell's `trap ... HUP` would then do nothing (POSIX shells may not trap
// a signal ignored on entry), and `nomad alloc signal -s HUP` would reach
// a task that cannot hear it.
var inheritableSignals = []os.Signal{
	syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM,
	syscall.SIGUSR1, syscall.SIGUSR2,
}

// ignoredSink receives the signals the agent was started ignoring. Nothing
// reads it, and signal.Notify never blocks on a full channel: the agent
// still ignores them in effect.
var ignoredSink = make(chan os.Signal, 1)

// DefaultSignalsForChildren makes sure a task starts with the default
// disposition of every signal in inheritableSignals, whatever the agent
// inherited: a signal the agent ignores is caught instead (and dropped),
// and the kernel resets a caught signal to its default at exec. The
// drivers call it before every start; it costs nothing once done.
func DefaultSignalsForChildren() {
	for _, sig := range inheritableSignals {
		if signal.Ignored(sig) {
			signal.Notify(ignoredSink, sig)
		}
	}
}
