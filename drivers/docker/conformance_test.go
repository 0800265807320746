package docker

import (
	"strconv"
	"strings"
	"testing"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/internal/drivertest"
)

// docker keeps the Driver contract every driver keeps. The engine keeps a
// container's exit code and the container itself across agent restarts
// and reboots, so a re-attached task reports its real exit code and a
// handle names no boot.
func TestConformance(t *testing.T) {
	needPodman(t)
	// The container's command is its PID 1, which ignores a signal it
	// does not handle: the tasks trap what they must react to.
	loop := `echo ready; while :; do sleep 1 & wait $!; done`
	drivertest.RunConformance(t, drivertest.Suite{
		New:   func(t *testing.T) drivers.Driver { return newTestDriver(t) },
		Sleep: func(t *testing.T) *drivers.TaskConfig { return newTaskConfig(t, sh(`trap 'exit 143' TERM; `+loop)) },
		Exit: func(t *testing.T, code int) *drivers.TaskConfig {
			return newTaskConfig(t, sh("exit "+strconv.Itoa(code)))
		},
		Trap: func(t *testing.T, sig string) *drivers.TaskConfig {
			return newTaskConfig(t, sh(`trap 'echo trapped' `+strings.TrimPrefix(sig, "SIG")+`; `+loop))
		},
		Timeout: testTimeout,
		Caps:    drivertest.Caps{ExitStatusSurvivesAgent: true},
	})
}
