// Package drivertest holds what the drivers' tests share: the conformance
// suite every driver runs (RunConformance), which holds it to the Driver
// contract the task runner relies on, with capability flags where drivers
// legitimately differ; and a stand-in agent process that starts a task and
// is killed with SIGKILL, so that a test sees an agent crash from outside,
// as on a real node, rather than a driver value going out of scope.
package drivertest

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/drivers"
)

// agentEnv, set to a task config as JSON, makes a driver package's test
// binary the stand-in agent.
const agentEnv = "NOMAD_DRIVER_TEST_AGENT"

// RunAgentIfAsked is for TestMain: in a test binary started as the
// stand-in agent it starts the task with the driver newDriver builds,
// prints the handle the client would persist and waits to be killed; it
// never returns then. Otherwise it returns at once.
func RunAgentIfAsked(newDriver func() (drivers.Driver, error)) {
	if cfg := os.Getenv(agentEnv); cfg != "" {
		os.Exit(runAgent(cfg, newDriver))
	}
}

func runAgent(cfgJSON string, newDriver func() (drivers.Driver, error)) int {
	var cfg drivers.TaskConfig
	if err := json.Unmarshal([]byte(cfgJSON), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	d, err := newDriver()
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

// StartInCrashedAgent starts cfg in a stand-in agent (this test binary,
// with env added to its environment), kills it with SIGKILL once it has
// printed the task's handle, and returns the handle: the task is now an
// orphan nobody waits for.
func StartInCrashedAgent(t *testing.T, cfg *drivers.TaskConfig, env ...string) *drivers.TaskHandle {
	t.Helper()
	b, err := json.Marshal(cfg)
	must.NoError(t, err)
	agent := exec.Command(os.Args[0], "-test.run=^$")
	agent.Env = append(append(os.Environ(), agentEnv+"="+string(b)), env...)
	agent.Stderr = os.Stderr
	out, err := agent.StdoutPipe()
	must.NoError(t, err)
	must.NoError(t, agent.Start())
	var h drivers.TaskHandle
	err = json.NewDecoder(out).Decode(&h)
	_ = agent.Process.Signal(syscall.SIGKILL)
	_ = agent.Wait()
	must.NoError(t, err, must.Sprint("the stand-in agent printed no handle"))
	return &h
}
