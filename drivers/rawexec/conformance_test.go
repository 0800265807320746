//go:build linux

package rawexec

import (
	"testing"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/internal/drivertest"
)

// raw_exec keeps the Driver contract every driver keeps (start, wait,
// stop, signal, recover, recover after a reboot, FindTask).
func TestConformance(t *testing.T) {
	drivertest.RunConformance(t, drivertest.Suite{
		New: func(t *testing.T) drivers.Driver { return newTestDriver(t) },
		Sleep: func(t *testing.T) *drivers.TaskConfig {
			return newTaskConfig(t, "sh", "-c", drivertest.SleepScript(false))
		},
		Exit: func(t *testing.T, code int) *drivers.TaskConfig {
			return newTaskConfig(t, "sh", "-c", drivertest.ExitScript(code))
		},
		Trap: func(t *testing.T, sig string) *drivers.TaskConfig {
			return newTaskConfig(t, "sh", "-c", drivertest.TrapScript(sig))
		},
		Timeout: testTimeout,
		Caps:    drivertest.Caps{AfterReboot: drivertest.OtherBoot},
	})
}
