//go:build linux

package exec

import (
	"os"
	"testing"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/internal/drivertest"
)

// TestMain lets the test binary serve as the task init the driver
// re-executes, as the agent binary does in production, and as the stand-in
// agent of the re-attach tests.
func TestMain(m *testing.M) {
	Init()
	drivertest.RunAgentIfAsked(func() (drivers.Driver, error) { return New(drivers.Options{}) })
	os.Exit(m.Run())
}
