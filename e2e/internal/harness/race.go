//go:build race

package harness

// RaceEnabled: the test binary runs under the race detector (the agents
// it starts do not: Main builds them without it).
const RaceEnabled = true
