//go:build linux

package rawexec

import (
	"strconv"
	"strings"
	"testing"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/internal/drivertest"
)

// raw_exec keeps the Driver contract every driver keeps (start, wait,
// stop, signal, recover, recover after a reboot, FindTask).
func TestConformance(t *testing.T) {
	drivertest.RunConformance(t, rawExecSuite())
}

func rawExecSuite() drivertest.Suite {
	return drivertest.Suite{
		New: func(t *testing.T) drivers.Driver { return newTestDriver(t) },
		Sleep: func(t *testing.T) *drivers.TaskConfig {
			return newTaskConfig(t, "sh", "-c", "echo ready; exec sleep 300")
		},
		Exit: func(t *testing.T, code int) *drivers.TaskConfig {
			return newTaskConfig(t, "sh", "-c", "exit "+strconv.Itoa(code))
		},
		Trap: func(t *testing.T, sig string) *drivers.TaskConfig {
			return newTaskConfig(t, "sh", "-c", trapScript(sig))
		},
		Timeout: testTimeout,
		Caps:    drivertest.Caps{AfterReboot: drivertest.OtherBoot},
	}
}

// trapScript is a shell script that echoes "trapped" for each sig and runs
// on; its sleeps run in the background, as a trap runs only between
// commands.
func trapScript(sig string) string {
	return `trap 'echo trapped' ` + strings.TrimPrefix(sig, "SIG") + `; echo ready; while :; do sleep 1 & wait $!; done`
}
