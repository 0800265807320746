//go:build linux

package exec

import (
	"testing"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/internal/drivertest"
)

// exec keeps the Driver contract every driver keeps (start, wait, stop,
// signal, recover, recover after a reboot, FindTask); its task is the init
// of its PID namespace.
func TestConformance(t *testing.T) {
	sh := func(t *testing.T, script string) *drivers.TaskConfig {
		return newTaskConfig(t, "/bin/sh", "-c", script)
	}
	drivertest.RunConformance(t, drivertest.Suite{
		New: func(t *testing.T) drivers.Driver {
			needIsolation(t)
			return newTestDriver(t, nil)
		},
		Sleep:   func(t *testing.T) *drivers.TaskConfig { return sh(t, drivertest.SleepScript(true)) },
		Exit:    func(t *testing.T, code int) *drivers.TaskConfig { return sh(t, drivertest.ExitScript(code)) },
		Trap:    func(t *testing.T, sig string) *drivers.TaskConfig { return sh(t, drivertest.TrapScript(sig)) },
		Timeout: testTimeout,
		Caps:    drivertest.Caps{AfterReboot: drivertest.OtherBoot},
	})
}
