package mock

import (
	"testing"
	"time"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/internal/drivertest"
)

// mock_driver keeps the Driver contract every driver keeps, so that tests
// run on it hold for real drivers. It runs no process: it has no signals,
// no FindTask and no boot, and its handle replays the task's result.
func TestConformance(t *testing.T) {
	drivertest.RunConformance(t, drivertest.Suite{
		New: func(t *testing.T) drivers.Driver { return newTestDriver(t) },
		Sleep: func(t *testing.T) *drivers.TaskConfig {
			return newTaskConfig("sleep", map[string]any{"stdout_string": "ready\n"})
		},
		Exit: func(t *testing.T, code int) *drivers.TaskConfig {
			return newTaskConfig("exit", map[string]any{"run_for": "1ms", "exit_code": code})
		},
		// kill_after outlasts any stop timeout: the task is killed at it.
		Trap: func(t *testing.T, sig string) *drivers.TaskConfig {
			return newTaskConfig("trap", map[string]any{"stdout_string": "ready\n", "kill_after": "1h"})
		},
		Timeout: 10 * time.Second,
		Caps:    drivertest.Caps{ExitStatusSurvivesAgent: true},
	})
}
