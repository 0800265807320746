//go:build race

package race

import (
	"os"
	"runtime"
	"testing"
)

// Enabled: the test binary runs under the race detector.
const Enabled = true

// OneProcForBubbles runs the test binary on one P under the race
// detector. Go 1.26's synctest fires a bubble's timers on the shared
// race context of its timer heap, while bubbled goroutines on other Ps
// can run theirs on the same context: the ThreadSanitizer's state is
// then corrupted and the binary dies with SIGSEGV in StackDepotBase::Put
// (golang/go#78156). TestMemCluster_FailedReplacementFollowsReschedulePolicy
// crashed in about one run in seven on two Ps and in none of 25 on one.
// Packages whose tests run clusters in bubbles have Main as TestMain;
// go test still runs packages in parallel, so the run costs little more
// (testutil: 96 s on two Ps, 93 s on one).
func OneProcForBubbles() { runtime.GOMAXPROCS(1) }

// Main is the TestMain of a package whose tests run clusters in bubbles:
// its tests on one P under the race detector (OneProcForBubbles).
func Main(m *testing.M) {
	OneProcForBubbles()
	os.Exit(m.Run())
}
