package rawexec

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// procStat is the part of /proc/<pid>/stat the driver needs.
type procStat struct {
	State     byte // R, S, D, Z, ...
	Pgid      int
	StartTime uint64 // clock ticks after boot
}

// exited reports whether the process has finished running: a zombie (Z) or
// dead (X) process will never run again and only awaits its parent.
func (p procStat) exited() bool { return p.State == 'Z' || p.State == 'X' }

// parseProcStat parses the contents of /proc/<pid>/stat (see proc(5)). The
// command name (field 2) is in parentheses and may itself contain spaces and
// parentheses, so the fields after it are found from the last ')'.
func parseProcStat(b []byte) (procStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("malformed stat line: no command name")
	}
	// rest[0] is field 3; field n is rest[n-3].
	rest := strings.Fields(string(b[i+1:]))
	const (
		fieldState     = 3
		fieldPgid      = 5
		fieldStartTime = 22
	)
	if len(rest) <= fieldStartTime-3 {
		return procStat{}, fmt.Errorf("malformed stat line: %d fields after the command name", len(rest))
	}
	pgid, err := strconv.Atoi(rest[fieldPgid-3])
	if err != nil {
		return procStat{}, fmt.Errorf("malformed stat line: pgid: %w", err)
	}
	start, err := strconv.ParseUint(rest[fieldStartTime-3], 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("malformed stat line: starttime: %w", err)
	}
	return procStat{State: rest[fieldState-3][0], Pgid: pgid, StartTime: start}, nil
}
