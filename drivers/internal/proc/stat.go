package proc

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nomad-edge/nomad/drivers"
)

// ErrGone is the cause when a pid has no /proc entry. It wraps
// drivers.ErrTaskNotFound, so that a driver can return it as is.
var ErrGone = fmt.Errorf("%w: process is gone", drivers.ErrTaskNotFound)

// IsGone reports whether err means the process does not exist.
func IsGone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH)
}

// DefaultPollInterval is how often a watched process is checked when the
// kernel offers no pidfd.
const DefaultPollInterval = time.Second

// Stat is the part of /proc/<pid>/stat the drivers need.
type Stat struct {
	State     byte // R, S, D, Z, ...
	Pgid      int
	StartTime uint64 // clock ticks after boot
	// UserTicks and SystemTicks are the CPU time the process has used,
	// in clock ticks (USER_HZ); RSSPages its resident set, in pages.
	UserTicks, SystemTicks uint64
	RSSPages               uint64
}

// Exited reports whether the process has finished running: a zombie (Z) or
// dead (X) process will never run again and only awaits its parent.
func (p Stat) Exited() bool { return p.State == 'Z' || p.State == 'X' }

// ParseStat parses the contents of /proc/<pid>/stat (see proc(5)). The
// command name (field 2) is in parentheses and may itself contain spaces and
// parentheses, so the fields after it are found from the last ')'.
func ParseStat(b []byte) (Stat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return Stat{}, fmt.Errorf("malformed stat line: no command name")
	}
	// rest[0] is field 3; field n is rest[n-3].
	rest := strings.Fields(string(b[i+1:]))
	const (
		fieldState     = 3
		fieldPgid      = 5
		fieldUtime     = 14
		fieldStime     = 15
		fieldStartTime = 22
		fieldRSS       = 24
	)
	if len(rest) <= fieldRSS-3 {
		return Stat{}, fmt.Errorf("malformed stat line: %d fields after the command name", len(rest))
	}
	pgid, err := strconv.Atoi(rest[fieldPgid-3])
	if err != nil {
		return Stat{}, fmt.Errorf("malformed stat line: pgid: %w", err)
	}
	start, err := strconv.ParseUint(rest[fieldStartTime-3], 10, 64)
	if err != nil {
		return Stat{}, fmt.Errorf("malformed stat line: starttime: %w", err)
	}
	// Counters that do not parse stay zero: they feed statistics, not
	// identity.
	ut, _ := strconv.ParseUint(rest[fieldUtime-3], 10, 64)
	st, _ := strconv.ParseUint(rest[fieldStime-3], 10, 64)
	rss, _ := strconv.ParseUint(rest[fieldRSS-3], 10, 64)
	return Stat{
		State: rest[fieldState-3][0], Pgid: pgid, StartTime: start,
		UserTicks: ut, SystemTicks: st, RSSPages: rss,
	}, nil
}
