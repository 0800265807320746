//go:build !race

package partition

// raceEnabled: the test binary runs under the race detector.
const raceEnabled = false
