//go:build linux

package exec

import (
	"strconv"
	"strings"
	"testing"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/internal/drivertest"
)

// exec keeps the Driver contract every driver keeps (start, wait, stop,
// signal, recover, recover after a reboot, FindTask).
func TestConformance(t *testing.T) {
	drivertest.RunConformance(t, drivertest.Suite{
		New: func(t *testing.T) drivers.Driver {
			needIsolation(t)
			return newTestDriver(t, nil)
		},
		// The task is its PID namespace's init, which ignores a signal
		// it does not handle: it traps SIGTERM to die of it.
		Sleep: func(t *testing.T) *drivers.TaskConfig {
			return newTaskConfig(t, "/bin/sh", "-c", `trap 'exit 143' TERM; echo ready; while :; do sleep 1 & wait $!; done`)
		},
		Exit: func(t *testing.T, code int) *drivers.TaskConfig {
			return newTaskConfig(t, "/bin/sh", "-c", "exit "+strconv.Itoa(code))
		},
		Trap: func(t *testing.T, sig string) *drivers.TaskConfig {
			return newTaskConfig(t, "/bin/sh", "-c",
				`trap 'echo trapped' `+strings.TrimPrefix(sig, "SIG")+`; echo ready; while :; do sleep 1 & wait $!; done`)
		},
		Timeout: testTimeout,
		Caps:    drivertest.Caps{AfterReboot: drivertest.OtherBoot},
	})
}
