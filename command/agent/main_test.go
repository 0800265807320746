package agent_test

import (
	"os"
	"testing"

	"github.com/nomad-edge/nomad/drivers/exec"
)

// TestMain lets the test binary serve as the exec driver's task init, as
// the agent binary does in production (main.go), so that dev agents in
// these tests can run exec tasks.
func TestMain(m *testing.M) {
	exec.Init()
	os.Exit(m.Run())
}
