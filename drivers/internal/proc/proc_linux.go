//go:build linux

package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/helper/clock"
)

// Supported reports whether this platform has /proc and pidfd.
const Supported = true

// ReadStat reads /proc/<pid>/stat. A missing process yields an error
// wrapping ErrGone (and so drivers.ErrTaskNotFound).
func ReadStat(pid int) (Stat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		if IsGone(err) {
			return Stat{}, fmt.Errorf("pid %d: %w", pid, ErrGone)
		}
		return Stat{}, err
	}
	return ParseStat(b)
}

// BootID identifies the current boot, so that a handle from before a reboot
// is never matched against a process that merely has the same pid and start
// tick. It is "" when the kernel does not expose it.
func BootID() string { return clock.BootID() }

// StartedAt turns a process's start tick (field 22 of its stat) into a
// time, from the boot time (clock.BootTime, to the nanosecond). Linux
// counts those ticks at USER_HZ, 100 per second on every architecture it
// exposes to user space, so the result is the start truncated to 10 ms.
// Where the boot clock cannot be read it falls back on /proc/stat's btime
// (whole seconds), and on now when that fails too.
func StartedAt(ticks uint64) time.Time {
	const userHZ = 100
	since := time.Duration(ticks) * time.Second / userHZ
	if boot := clock.BootTime(); !boot.IsZero() {
		return boot.Add(since)
	}
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Now()
	}
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		if v, ok := bytes.CutPrefix(line, []byte("btime ")); ok {
			boot, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
			if err != nil {
				break
			}
			return time.Unix(boot, 0).Add(since)
		}
	}
	return time.Now()
}

// WatchOptions tune Watch.
type WatchOptions struct {
	// PollInterval is how often /proc is read without a pidfd; zero means
	// DefaultPollInterval.
	PollInterval time.Duration
	// NoPidfd forces the /proc polling fallback, so that tests exercise
	// the path kernels before 5.10 take.
	NoPidfd bool
	// Clock paces the polling; nil means the real clock.
	Clock clock.Clock
}

// Watcher observes the exit of a process that is not the client's child.
type Watcher struct {
	pid       int
	startTime uint64
	pidfd     *os.File // nil when polling /proc
	interval  time.Duration
	clock     clock.Clock

	stopOnce sync.Once
	stop     chan struct{}
}

// Watch checks that pid still names the process that started at startTime
// and starts watching it. It fails with drivers.ErrTaskNotFound when the pid
// is gone or belongs to another process.
func Watch(pid int, startTime uint64, opts WatchOptions) (*Watcher, error) {
	w := &Watcher{pid: pid, startTime: startTime, interval: opts.PollInterval, clock: opts.Clock, stop: make(chan struct{})}
	if w.interval <= 0 {
		w.interval = DefaultPollInterval
	}
	if w.clock == nil {
		w.clock = clock.Real()
	}
	if !opts.NoPidfd {
		fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
		switch {
		case err == nil:
			// os.NewFile registers a non-blocking fd with the runtime
			// poller, so waiting costs no thread.
			w.pidfd = os.NewFile(uintptr(fd), fmt.Sprintf("pidfd:%d", pid))
		case errors.Is(err, unix.ESRCH):
			return nil, fmt.Errorf("pid %d: %w", pid, ErrGone)
		default:
			// ENOSYS before Linux 5.3, EINVAL for the flag before 5.10:
			// poll /proc instead.
		}
	}
	// Verify identity after opening the pidfd: if the pid was reused in
	// between, the start time read here no longer matches and the pidfd,
	// pointing at the stranger, is dropped.
	if err := w.checkIdentity(); err != nil {
		w.Close()
		return nil, err
	}
	return w, nil
}

// HasPidfd reports whether the watch uses a pidfd rather than polling.
func (w *Watcher) HasPidfd() bool { return w.pidfd != nil }

func (w *Watcher) checkIdentity() error {
	ps, err := ReadStat(w.pid)
	if err != nil {
		return err
	}
	if ps.StartTime != w.startTime {
		return fmt.Errorf("%w: pid %d was reused by a process started at tick %d, the task started at tick %d",
			drivers.ErrTaskNotFound, w.pid, ps.StartTime, w.startTime)
	}
	if ps.Exited() {
		// A zombie nobody has reaped yet (its parent, the client that
		// started it, died too) is as gone as a process that was
		// reaped: it will never run again, and its exit status is lost.
		return fmt.Errorf("pid %d: %w: it has exited and awaits its parent (state %c)", w.pid, ErrGone, ps.State)
	}
	return nil
}

// Wait blocks until the process exits (true) or Close is called (false).
func (w *Watcher) Wait() bool {
	if w.pidfd != nil {
		err := WaitPidfd(w.pidfd)
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
	for {
		if w.exited() {
			return true
		}
		if !clock.Sleep(w.clock, w.interval, w.stop) {
			return false
		}
	}
}

// exited reports whether the watched process is gone, a zombie, or replaced
// by another process under the same pid.
func (w *Watcher) exited() bool {
	ps, err := ReadStat(w.pid)
	if err != nil {
		// Anything but "no such process" (a transient read failure) is
		// not proof of exit; the next tick looks again.
		return errors.Is(err, ErrGone)
	}
	return ps.StartTime != w.startTime || ps.Exited()
}

// Close stops the watch; a pending Wait returns false.
func (w *Watcher) Close() {
	w.stopOnce.Do(func() {
		close(w.stop)
		if w.pidfd != nil {
			w.pidfd.Close()
		}
	})
}

// WaitPidfd blocks until the pidfd is readable, which the kernel signals once
// the process has exited. It fails if f is closed or cannot be polled.
func WaitPidfd(f *os.File) error {
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

// GroupPids returns the live processes of process group pgid, read from
// /proc: a raw_exec task and everything it forked that stayed in its group.
func GroupPids(pgid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := ReadStat(pid); err == nil && st.Pgid == pgid && !st.Exited() {
			out = append(out, pid)
		}
	}
	return out
}
