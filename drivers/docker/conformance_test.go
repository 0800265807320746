package docker

import (
	"testing"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/internal/drivertest"
)

// docker keeps the Driver contract every driver keeps; the container's
// command is its PID 1. The engine keeps a container's exit code and the
// container itself across agent restarts and reboots, so a re-attached
// task reports its real exit code and a handle names no boot.
func TestConformance(t *testing.T) {
	needPodman(t)
	drivertest.RunConformance(t, drivertest.Suite{
		New:   func(t *testing.T) drivers.Driver { return newTestDriver(t) },
		Sleep: func(t *testing.T) *drivers.TaskConfig { return newTaskConfig(t, sh(drivertest.SleepScript(true))) },
		Exit: func(t *testing.T, code int) *drivers.TaskConfig {
			return newTaskConfig(t, sh(drivertest.ExitScript(code)))
		},
		Trap: func(t *testing.T, sig string) *drivers.TaskConfig {
			return newTaskConfig(t, sh(drivertest.TrapScript(sig)))
		},
		Timeout: testTimeout,
		Caps:    drivertest.Caps{ExitStatusSurvivesAgent: true},
	})
}
