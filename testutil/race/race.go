//go:build race

package race

// Enabled: the test binary runs under the race detector.
const Enabled = true
