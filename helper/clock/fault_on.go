//go:build faultclock

package clock

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// FaultRecheck is the longest a fault clock goes on a reading of its file.
const FaultRecheck = 50 * time.Millisecond

// processFault is the process's one fault clock, made at the first Real
// when FaultFileEnv is set, nil when it is not. A binary asked to step
// its clock that cannot do so honestly stops at once rather than run
// with the real clock.
var processFault = sync.OnceValue(func() Clock {
	path := os.Getenv(FaultFileEnv)
	if path == "" {
		return nil
	}
	f, err := newFaultClock(realClock{}, path)
	if err != nil {
		panic(fmt.Sprintf("%s=%s: %v", FaultFileEnv, path, err))
	}
	return f
})

func withFault(c Clock) Clock {
	if f := processFault(); f != nil {
		return f
	}
	return c
}

// faultClock is base with its wall readings moved by the offset its file
// holds; base's timers, untouched.
type faultClock struct {
	base  Clock
	path  string
	start time.Time // base's reading at creation: the rechecks count from it

	mu      sync.Mutex
	offset  time.Duration
	checked time.Duration // since start, when the file was last read
	read    bool
	bad     string // the content last reported as unparsable
}

func newFaultClock(base Clock, path string) (*faultClock, error) {
	if err := checkShiftWall(); err != nil {
		return nil, err
	}
	return &faultClock{base: base, path: path, start: base.Now()}, nil
}

// Now is base's reading with the wall reading moved by the offset.
func (f *faultClock) Now() time.Time {
	now := f.base.Now()
	return shiftWall(now, f.offsetAt(now))
}

func (f *faultClock) NewTimer(d time.Duration) Timer { return f.base.NewTimer(d) }

func (f *faultClock) AfterFunc(d time.Duration, fn func()) Timer { return f.base.AfterFunc(d, fn) }

// offsetAt is the offset in force at now (a reading of base), the file
// read again when FaultRecheck has passed since the last read.
func (f *faultClock) offsetAt(now time.Time) time.Duration {
	since := now.Sub(f.start) // monotonic: the offset does not pace its own rechecks
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.read && since-f.checked < FaultRecheck {
		return f.offset
	}
	f.read, f.checked = true, since
	b, err := os.ReadFile(f.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		f.offset = 0
	case err != nil:
		f.reportLocked(err.Error())
	default:
		s := strings.TrimSpace(string(b))
		if s == "" {
			f.offset = 0
			break
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			f.reportLocked(fmt.Sprintf("%q: %v", s, err))
			break
		}
		f.offset = d
	}
	return f.offset
}

// reportLocked says once per distinct problem that the file was not used.
func (f *faultClock) reportLocked(problem string) {
	if problem == f.bad {
		return
	}
	f.bad = problem
	fmt.Fprintf(os.Stderr, "faultclock: %s: %s; the offset stays %v\n", f.path, problem, f.offset)
}

// timeWords is time.Time's layout (Go 1.9 on): the wall word, which with
// the hasMonotonic bit set holds the wall seconds and nanoseconds, the ext
// word, which then holds the monotonic reading, and the location.
// checkShiftWall proves the layout at run time before the clock is used.
type timeWords struct {
	wall uint64
	ext  int64
	loc  *time.Location
}

// shiftWall moves t's wall reading by d and leaves its monotonic reading
// as it was: a reading taken after a step of the wall clock by d. The
// time package has no way to build one (Add moves both readings, Round(0)
// drops the monotonic one), so shiftWall adds d and puts the monotonic
// reading back. A t without a monotonic reading, or one that Add leaves
// without (outside the years 1885 to 2157), is only a wall reading and
// gets Add's.
func shiftWall(t time.Time, d time.Duration) time.Time {
	if d == 0 {
		return t
	}
	u := t.Add(d)
	if !hasMonotonic(t) || !hasMonotonic(u) {
		return u
	}
	(*timeWords)(unsafe.Pointer(&u)).ext = (*timeWords)(unsafe.Pointer(&t)).ext
	return u
}

// hasMonotonic says whether t carries a monotonic reading: Round(0)
// strips it, which changes the words only when there was one.
func hasMonotonic(t time.Time) bool { return t != t.Round(0) }

// checkShiftWall proves shiftWall on this Go: a reading moved by an hour
// is an hour later by the wall and no later by the monotonic clock.
func checkShiftWall() error {
	if unsafe.Sizeof(time.Time{}) != unsafe.Sizeof(timeWords{}) {
		return errors.New("time.Time's layout changed: the fault clock cannot move the wall reading alone")
	}
	now := time.Now()
	if !hasMonotonic(now) {
		// Inside a testing/synctest bubble, where readings carry no
		// monotonic part: every reading is a wall reading, so a step
		// moves Sub there too. Test the model outside a bubble.
		return nil
	}
	s := shiftWall(now, time.Hour)
	if !hasMonotonic(s) || s.Sub(now) != 0 || s.Round(0).Sub(now.Round(0)) != time.Hour {
		return fmt.Errorf("time.Time's layout changed: a reading moved by an hour is %v later by the monotonic clock and %v by the wall",
			s.Sub(now), s.Round(0).Sub(now.Round(0)))
	}
	return nil
}
