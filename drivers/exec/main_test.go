//go:build linux

package exec

import (
	"os"
	"testing"
)

// TestMain lets the test binary serve as the task init the driver
// re-executes, as the agent binary does in production.
func TestMain(m *testing.M) {
	Init()
	os.Exit(m.Run())
}
