//go:build !linux

package proc

import (
	"errors"
	"os"
	"time"

	"github.com/nomad-edge/nomad/helper/clock"
)

// Supported reports whether this platform has /proc and pidfd.
const Supported = false

var errUnsupported = errors.New("needs Linux's /proc")

// ReadStat fails: there is no /proc here.
func ReadStat(int) (Stat, error) { return Stat{}, errUnsupported }

// BootID is unknown here.
func BootID() string { return "" }

// StartedAt returns now: there is no boot time to count from.
func StartedAt(uint64) time.Time { return time.Now() }

// WatchOptions tune Watch.
type WatchOptions struct {
	PollInterval time.Duration
	NoPidfd      bool
	Clock        clock.Clock
}

// Watcher is not available here.
type Watcher struct{}

// Watch fails: there is no /proc here.
func Watch(int, uint64, WatchOptions) (*Watcher, error) { return nil, errUnsupported }

// HasPidfd is false.
func (*Watcher) HasPidfd() bool { return false }

// Wait returns at once.
func (*Watcher) Wait() bool { return false }

// Close does nothing.
func (*Watcher) Close() {}

// WaitPidfd fails.
func WaitPidfd(*os.File) error { return errUnsupported }

// GroupPids finds nothing here.
func GroupPids(int) []int { return nil }
