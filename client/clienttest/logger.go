package clienttest

import (
	"os"

	"github.com/hashicorp/go-hclog"
)

// Logger returns a logger for tests: silent unless NOMAD_TEST_LOG names a
// level ("debug", "trace"), in which case it writes to stderr. It never
// writes through testing.T, so goroutines that outlive a test cannot make it
// panic.
func Logger() hclog.Logger {
	lvl := os.Getenv("NOMAD_TEST_LOG")
	if lvl == "" {
		return hclog.NewNullLogger()
	}
	return hclog.New(&hclog.LoggerOptions{Level: hclog.LevelFromString(lvl), Output: os.Stderr})
}
