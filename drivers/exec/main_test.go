//go:build linux

package exec

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/nomad-edge/nomad/drivers"
)

// testAgentEnv, when set to a task config as JSON, makes the test binary a
// stand-in agent: it starts that task with the driver, prints the handle the
// client would persist, and waits to be killed. Tests kill it with SIGKILL to
// see an agent crash from outside, as on a real node.
const testAgentEnv = "NOMAD_EXEC_TEST_AGENT"

// TestMain lets the test binary serve as the task init the driver
// re-executes, as the agent binary does in production, and as the stand-in
// agent.
func TestMain(m *testing.M) {
	Init()
	if cfg := os.Getenv(testAgentEnv); cfg != "" {
		os.Exit(runTestAgent(cfg))
	}
	os.Exit(m.Run())
}

func runTestAgent(cfgJSON string) int {
	var cfg drivers.TaskConfig
	if err := json.Unmarshal([]byte(cfgJSON), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	d, err := New(drivers.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	h, err := d.StartTask(&cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := json.NewEncoder(os.Stdout).Encode(h); err != nil {
		return 1
	}
	select {}
}
