package drivers

import (
	"fmt"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// ParseSignal turns a signal name as written in a job's `kill_signal` into a
// signal. The empty name means SIGTERM, the conventional polite stop. Names
// are matched case-insensitively, with or without the "SIG" prefix, because
// operators write all three forms. Unknown names are an error wrapping
// ErrUnknownSignal rather than a fallback, so that a typo never turns a
// graceful stop into a different signal.
func ParseSignal(name string) (syscall.Signal, error) {
	n := strings.ToUpper(strings.TrimSpace(name))
	if n == "" {
		return syscall.SIGTERM, nil
	}
	if !strings.HasPrefix(n, "SIG") {
		n = "SIG" + n
	}
	if sig := unix.SignalNum(n); sig != 0 {
		return sig, nil
	}
	return 0, fmt.Errorf("%w: %q", ErrUnknownSignal, name)
}

// SignalExitResult is the result of a task that was ended by sig, with the
// exit code following the shell convention so that it is never mistaken for
// success.
func SignalExitResult(sig syscall.Signal) *ExitResult {
	return &ExitResult{ExitCode: signalExitBase + int(sig), Signal: int(sig)}
}

// signalExitBase is what shells add to a signal number to make the exit code
// of a process that signal killed.
const signalExitBase = 128
