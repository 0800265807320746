//go:build !race

package race

import (
	"os"
	"testing"
)

// Enabled: the test binary runs under the race detector.
const Enabled = false

// OneProcForBubbles does nothing without the race detector (race.go).
func OneProcForBubbles() {}

// Main runs the tests as they are without the race detector (race.go).
func Main(m *testing.M) { os.Exit(m.Run()) }
