//go:build faultclock

package clock

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoenig/test/must"
)

// steppingBase is a base clock whose readings carry a monotonic part, as
// the real clock's do outside a synctest bubble (inside one they carry
// none), and advance only when the test says: the fault clock's rechecks
// are paced by it with no waiting.
type steppingBase struct {
	realClock
	mu  sync.Mutex
	now time.Time
}

func newSteppingBase() *steppingBase { return &steppingBase{now: time.Now()} }

func (b *steppingBase) Now() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.now
}

func (b *steppingBase) advance(d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.now = b.now.Add(d)
}

// writeOffset replaces the offset file whole, as the harness does.
func writeOffset(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	must.NoError(t, os.WriteFile(tmp, []byte(content), 0o644))
	must.NoError(t, os.Rename(tmp, path))
}

// wallSub is b - a by the wall readings alone, as a serialised time or
// one compared with the servers' is compared.
func wallSub(b, a time.Time) time.Duration { return b.Round(0).Sub(a.Round(0)) }

// TestFaultClock_StepMovesWallNotMonotonic checks that a step written to
// the file moves the wall readings taken after it, forward and back, while
// durations between readings of the process stay on the monotonic clock:
// that is what a step of CLOCK_REALTIME does to a Go program, and what
// the client's heartbeat loop and its serverClock must be tested against.
func TestFaultClock_StepMovesWallNotMonotonic(t *testing.T) {
	path := filepath.Join(t.TempDir(), "offset")
	writeOffset(t, path, "0s")
	base := newSteppingBase()
	f, err := newFaultClock(base, path)
	must.NoError(t, err)

	t0 := f.Now()
	must.Eq(t, 0, wallSub(t0, base.Now()))

	writeOffset(t, path, "10m")
	base.advance(FaultRecheck)
	t1 := f.Now()
	must.Eq(t, FaultRecheck, t1.Sub(t0), must.Sprint("Sub between readings of the process: monotonic, not stepped"))
	must.Eq(t, 10*time.Minute+FaultRecheck, wallSub(t1, t0), must.Sprint("the wall reading stepped forward"))
	must.Eq(t, 10*time.Minute, wallSub(t1, base.Now()))
	must.Eq(t, base.Now().Add(10*time.Minute).Unix(), t1.Unix(), must.Sprint("what goes on the wire is the stepped wall"))

	writeOffset(t, path, "-10m")
	base.advance(FaultRecheck)
	t2 := f.Now()
	must.Eq(t, FaultRecheck, t2.Sub(t1))
	must.True(t, t2.After(t0), must.Sprint("later by the monotonic clock"))
	must.True(t, t2.Round(0).Before(t0.Round(0)), must.Sprint("earlier by the wall"))
	must.Eq(t, -10*time.Minute, wallSub(t2, base.Now()))

	writeOffset(t, path, "0s")
	base.advance(FaultRecheck)
	t3 := f.Now()
	must.Eq(t, 0, wallSub(t3, base.Now()), must.Sprint("back on the real clock"))
	must.Eq(t, 3*FaultRecheck, t3.Sub(t0))
}

// TestFaultClock_RereadsAtMostEveryRecheck checks that the file is read
// again only once FaultRecheck has passed on the monotonic clock: the
// client reads its clock on every RPC, and a step shows within that.
func TestFaultClock_RereadsAtMostEveryRecheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "offset")
	writeOffset(t, path, "1m")
	base := newSteppingBase()
	f, err := newFaultClock(base, path)
	must.NoError(t, err)
	must.Eq(t, time.Minute, wallSub(f.Now(), base.Now()))

	writeOffset(t, path, "2m")
	base.advance(FaultRecheck - time.Nanosecond)
	must.Eq(t, time.Minute, wallSub(f.Now(), base.Now()), must.Sprint("not read again yet"))
	base.advance(time.Nanosecond)
	must.Eq(t, 2*time.Minute, wallSub(f.Now(), base.Now()))
}

// TestFaultClock_MissingEmptyOrBadFile checks that no file and an empty
// one mean no offset, and that content that does not parse leaves the
// offset in force: a half-written file must not step the clock back.
func TestFaultClock_MissingEmptyOrBadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "offset")
	base := newSteppingBase()
	f, err := newFaultClock(base, path)
	must.NoError(t, err)
	must.Eq(t, 0, wallSub(f.Now(), base.Now()), must.Sprint("no file"))

	writeOffset(t, path, "5m\n")
	base.advance(FaultRecheck)
	must.Eq(t, 5*time.Minute, wallSub(f.Now(), base.Now()))

	writeOffset(t, path, "five minutes")
	base.advance(FaultRecheck)
	must.Eq(t, 5*time.Minute, wallSub(f.Now(), base.Now()), must.Sprint("unparsable: the offset stays"))

	writeOffset(t, path, "")
	base.advance(FaultRecheck)
	must.Eq(t, 0, wallSub(f.Now(), base.Now()), must.Sprint("empty"))
}

// TestFaultClock_TimersIgnoreTheStep checks that timers run their
// duration whatever the offset: Go's timers are on the monotonic clock,
// so a step neither fires a heartbeat timer early nor holds it.
func TestFaultClock_TimersIgnoreTheStep(t *testing.T) {
	path := filepath.Join(t.TempDir(), "offset")
	writeOffset(t, path, "10m")
	synctest.Test(t, func(t *testing.T) {
		f, err := newFaultClock(realClock{}, path)
		must.NoError(t, err)
		start := time.Now()
		tm := f.NewTimer(time.Second)
		<-tm.C()
		must.Eq(t, time.Second, time.Since(start))
		fired := make(chan time.Duration, 1)
		f.AfterFunc(2*time.Second, func() { fired <- time.Since(start) })
		must.Eq(t, 3*time.Second, <-fired)
	})
}

// TestShiftWall checks the model's primitive on this Go: the monotonic
// reading is kept, a reading without one is moved as a wall time, and a
// zero step is the reading itself.
func TestShiftWall(t *testing.T) {
	must.NoError(t, checkShiftWall())
	now := time.Now()
	must.Eq(t, now, shiftWall(now, 0))
	wall := now.Round(0)
	must.Eq(t, wall.Add(time.Hour), shiftWall(wall, time.Hour))
	back := shiftWall(now, -time.Hour)
	must.Eq(t, 0, back.Sub(now))
	must.Eq(t, -time.Hour, wallSub(back, now))
}

// TestReal_TakesTheFileFromTheEnvironment checks that a tagged process
// whose environment names a file has Real follow it: the harness steps a
// client agent that way. It runs this test binary again with the variable
// set (Real's fault clock is made once per process).
func TestReal_TakesTheFileFromTheEnvironment(t *testing.T) {
	if os.Getenv(FaultFileEnv) != "" {
		got := wallSub(Real().Now(), time.Now())
		must.Between(t, -10*time.Minute-time.Second, got, -10*time.Minute+time.Second)
		return
	}
	path := filepath.Join(t.TempDir(), "offset")
	writeOffset(t, path, "-10m")
	cmd := exec.Command(os.Args[0], "-test.run=^TestReal_TakesTheFileFromTheEnvironment$", "-test.v")
	cmd.Env = append(os.Environ(), FaultFileEnv+"="+path)
	out, err := cmd.CombinedOutput()
	must.NoError(t, err, must.Sprintf("%s", out))
	must.StrContains(t, string(out), "--- PASS")

	must.Eq(t, Clock(realClock{}), Real(), must.Sprint("without the variable, the real clock"))
}
