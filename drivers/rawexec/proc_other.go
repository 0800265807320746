//go:build !linux

package rawexec

import (
	"errors"
	"time"
)

// platformSupported gates the driver: it relies on Linux's /proc and pidfd.
const platformSupported = false

var errUnsupported = errors.New("raw_exec requires Linux")

func readProcStat(int) (procStat, error) { return procStat{}, errUnsupported }

func bootID() string { return "" }

type watchOptions struct {
	pollInterval time.Duration
	noPidfd      bool
}

type procWatch struct{ pidfd *struct{} }

func watchProcess(taskState, watchOptions) (*procWatch, error) { return nil, errUnsupported }

func (*procWatch) wait() bool { return false }

func (*procWatch) close() {}
