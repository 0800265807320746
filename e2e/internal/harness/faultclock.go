package harness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/helper/atomicfile"
	"github.com/nomad-edge/nomad/helper/clock"
)

// faultClockBin builds, once per test binary and only when a test asks,
// the nomad binary with the faultclock tag (helper/clock's fault_on.go)
// beside the one Main built, so Main's check for agents that outlived
// their tests covers it too.
var faultClockBin = sync.OnceValues(func() (string, error) {
	if bin == "" {
		return "", fmt.Errorf("no binary: the suite's TestMain must call harness.Main")
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	out := filepath.Join(filepath.Dir(bin), "nomad-faultclock")
	build := exec.Command("go", "build", "-tags", "faultclock", "-o", out, ".")
	build.Dir = root
	if b, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building nomad -tags faultclock: %v\n%s", err, b)
	}
	return out, nil
})

// FaultClockBin is the nomad binary built with the faultclock tag, built
// at the first call of the test binary.
func FaultClockBin(t testing.TB) string {
	t.Helper()
	path, err := faultClockBin()
	must.NoError(t, err)
	return path
}

// UseFaultClock makes the agent, from its next start on, ours built with
// the faultclock tag with its offset file in its directory (AgentConfig's
// FaultClock, for an agent a shared constructor added).
func (a *Agent) UseFaultClock() {
	a.t.Helper()
	must.False(a.t, a.Running(), must.Sprintf("%s runs: give it the fault clock before it starts", a.Name))
	a.faultBin = FaultClockBin(a.t)
	a.clockFile = filepath.Join(filepath.Dir(a.LogPath), "clock-offset")
}

// SetClockOffset steps the wall clock of an agent added with FaultClock:
// from within 50 ms on (the fault clock's recheck), its readings are the machine's moved
// by d (positive: ahead; 0: the machine's clock again), its monotonic
// clock and timers untouched, as after a step of CLOCK_REALTIME (see
// helper/clock's FaultFileEnv for what it does and does not move). The
// offset is absolute, not added to the last, and outlives restarts of
// the agent; it returns when the file is in place.
func (a *Agent) SetClockOffset(d time.Duration) {
	a.t.Helper()
	if a.clockFile == "" {
		a.t.Fatalf("%s has no fault clock: add it with AgentConfig.FaultClock", a.Name)
	}
	// Whole or not at all: a half-written file must not step the clock.
	must.NoError(a.t, atomicfile.Write(a.clockFile, []byte(d.String()+"\n"), 0o644))
	a.mu.Lock()
	a.clockOffset = d
	a.mu.Unlock()
}

// ClockOffset is the offset SetClockOffset last gave the agent.
func (a *Agent) ClockOffset() time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.clockOffset
}

// env is the agent's process environment: the test's, and the fault
// clock's file for an agent that has one.
func (a *Agent) env() []string {
	if a.clockFile == "" {
		return nil // exec's default: the test's own
	}
	return append(os.Environ(), clock.FaultFileEnv+"="+a.clockFile)
}
