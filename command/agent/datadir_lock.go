package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// dataDirLockFile is the lock an agent holds on its data dir for as long as
// it runs: two agents on one data dir would corrupt each other's raft log
// and client state.
const dataDirLockFile = "agent.lock"

// dataDirLock is a held lock; release drops it.
type dataDirLock struct {
	f *os.File
}

// lockDataDir takes the data dir's lock, writing this process's PID into
// it, or says which process holds it.
func lockDataDir(dir string) (*dataDirLock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating data_dir %s: %w", dir, err)
	}
	path := filepath.Join(dir, dataDirLockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			holder := "unknown pid"
			if buf, rerr := os.ReadFile(path); rerr == nil {
				if pid, perr := strconv.Atoi(strings.TrimSpace(string(buf))); perr == nil {
					holder = "pid " + strconv.Itoa(pid)
				}
			}
			return nil, fmt.Errorf("data_dir %s is in use by another agent (%s); stop it or choose another data_dir", dir, holder)
		}
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &dataDirLock{f: f}, nil
}

func (l *dataDirLock) release() {
	if l == nil || l.f == nil {
		return
	}
	_ = unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
	l.f.Close()
}
