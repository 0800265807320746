//go:build linux

package rawexec

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nomad-edge/nomad/drivers"
)

// platformSupported gates the driver: it relies on /proc and pidfd.
const platformSupported = true

// readProcStat reads /proc/<pid>/stat. A missing process yields an error
// wrapping errProcessGone (and so drivers.ErrTaskNotFound).
func readProcStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		if isGone(err) {
			return procStat{}, fmt.Errorf("pid %d: %w", pid, errProcessGone)
		}
		return procStat{}, err
	}
	return parseProcStat(b)
}

// bootID identifies the current boot, so that a handle from before a reboot
// is never matched against a process that merely has the same pid and start
// tick. It is "" when the kernel does not expose it.
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

type watchOptions struct {
	pollInterval time.Duration
	noPidfd      bool
}

// procWatch observes the exit of a process that is not the client's child.
type procWatch struct {
	st       taskState
	pidfd    *os.File // nil when polling /proc
	interval time.Duration

	stopOnce sync.Once
	stop     chan struct{}
}

// watchProcess checks that st still names a live process and starts watching
// it. It fails with drivers.ErrTaskNotFound when the pid is gone or belongs
// to another process.
func watchProcess(st taskState, opts watchOptions) (*procWatch, error) {
	w := &procWatch{st: st, interval: opts.pollInterval, stop: make(chan struct{})}
	if w.interval <= 0 {
		w.interval = defaultExitPollInterval
	}
	if !opts.noPidfd {
		fd, err := unix.PidfdOpen(st.Pid, unix.PIDFD_NONBLOCK)
		switch {
		case err == nil:
			// os.NewFile registers a non-blocking fd with the runtime
			// poller, so waiting costs no thread.
			w.pidfd = os.NewFile(uintptr(fd), fmt.Sprintf("pidfd:%d", st.Pid))
		case errors.Is(err, unix.ESRCH):
			return nil, fmt.Errorf("pid %d: %w", st.Pid, errProcessGone)
		default:
			// ENOSYS before Linux 5.3, EINVAL for the flag before 5.10:
			// poll /proc instead.
		}
	}
	// Verify identity after opening the pidfd: if the pid was reused in
	// between, the start time read here no longer matches and the pidfd,
	// pointing at the stranger, is dropped.
	if err := w.checkIdentity(); err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

func (w *procWatch) checkIdentity() error {
	ps, err := readProcStat(w.st.Pid)
	if err != nil {
		return err
	}
	if ps.StartTime != w.st.StartTime {
		return fmt.Errorf("%w: pid %d was reused by a process started at tick %d, the task started at tick %d",
			drivers.ErrTaskNotFound, w.st.Pid, ps.StartTime, w.st.StartTime)
	}
	return nil
}

// wait blocks until the process exits (true) or close is called (false).
func (w *procWatch) wait() bool {
	if w.pidfd != nil {
		err := waitPidfd(w.pidfd)
		if err == nil {
			return true
		}
		select {
		case <-w.stop:
			return false
		default:
			// The runtime could not poll the pidfd; fall back.
		}
	}
	t := time.NewTicker(w.interval)
	defer t.Stop()
	for {
		if w.exited() {
			return true
		}
		select {
		case <-w.stop:
			return false
		case <-t.C:
		}
	}
}

// exited reports whether the watched process is gone, a zombie, or replaced
// by another process under the same pid.
func (w *procWatch) exited() bool {
	ps, err := readProcStat(w.st.Pid)
	if err != nil {
		// Anything but "no such process" (a transient read failure) is
		// not proof of exit; the next tick looks again.
		return errors.Is(err, errProcessGone)
	}
	return ps.StartTime != w.st.StartTime || ps.exited()
}

// close stops the watch; a pending wait returns false.
func (w *procWatch) close() {
	w.stopOnce.Do(func() {
		close(w.stop)
		if w.pidfd != nil {
			w.pidfd.Close()
		}
	})
}

// waitPidfd blocks until the pidfd is readable, which the kernel signals once
// the process has exited. It fails if f is closed or cannot be polled.
func waitPidfd(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var pollErr error
	err = rc.Read(func(fd uintptr) bool {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			n, err := unix.Poll(fds, 0)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil {
				pollErr = err
				return true
			}
			// false: not yet readable, park until the poller says so.
			return n > 0
		}
	})
	if err != nil {
		return err
	}
	return pollErr
}
