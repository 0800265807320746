package drivers

import (
	"os"
	"path/filepath"
)

// Signaler is implemented by drivers that can send a running task a signal
// without stopping it (`nomad alloc signal`).
type Signaler interface {
	// SignalTask sends signal (a name as ParseSignal reads it) to the
	// task's processes. A task the driver does not track is
	// ErrTaskNotFound.
	SignalTask(taskID, signal string) error
}

// OpenTaskLog opens path for a task's stdout or stderr, creating its
// directory: a regular file for appending, or, when the client rotates the
// task's logs, the FIFO it reads (see client/logrotate). A FIFO is opened
// read-write so that the task never gets SIGPIPE while no client reads:
// its writes then wait in the pipe. An empty path returns nil, which exec
// maps to /dev/null.
func OpenTaskLog(path string) (*os.File, error) {
	if path == "" {
		return nil, nil
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode()&os.ModeNamedPipe != 0 {
		return os.OpenFile(path, os.O_RDWR, 0)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	return os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
}
