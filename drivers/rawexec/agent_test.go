//go:build linux

package rawexec

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	osexec "os/exec"
	"testing"

	"github.com/shoenig/test/must"
	"golang.org/x/sys/unix"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/internal/proc"
)

// testAgentEnv, when set to a task config as JSON, makes the test binary a
// stand-in agent: it starts that task, prints the handle the client would
// persist, and waits to be killed, so that tests see an agent crash from
// outside, as on a real node.
const testAgentEnv = "NOMAD_RAWEXEC_TEST_AGENT"

func TestMain(m *testing.M) {
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
	d, err := New(drivers.Options{Config: map[string]any{"enabled": true}})
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

// startInCrashedAgent starts cfg from a stand-in agent, kills it with
// SIGKILL and returns the handle it persisted.
func startInCrashedAgent(t *testing.T, cfg *drivers.TaskConfig) *drivers.TaskHandle {
	t.Helper()
	b, err := json.Marshal(cfg)
	must.NoError(t, err)
	agent := osexec.Command(os.Args[0])
	agent.Env = append(os.Environ(), testAgentEnv+"="+string(b))
	agent.Stderr = os.Stderr
	out, err := agent.StdoutPipe()
	must.NoError(t, err)
	must.NoError(t, agent.Start())
	line, err := bufio.NewReader(out).ReadBytes('\n')
	if err != nil {
		_ = agent.Process.Kill()
		_ = agent.Wait()
		t.Fatalf("stand-in agent printed no handle: %v", err)
	}
	must.NoError(t, agent.Process.Signal(unix.SIGKILL))
	_ = agent.Wait()
	var h drivers.TaskHandle
	must.NoError(t, json.Unmarshal(line, &h))
	return &h
}

// After the agent is killed with SIGKILL the task runs on in its cgroup; a
// new agent re-attaches to the same process, reads its stats from the
// cgroup named in the handle, and removes that cgroup when it destroys the
// task.
func TestRecoverTask_AfterAgentKill_Stats(t *testing.T) {
	needCgroups(t)
	cfg := newTaskConfig(t, "sh", "-c", busyLoop)
	saved := startInCrashedAgent(t, cfg)
	var st taskState
	must.NoError(t, saved.GetDriverState(&st))
	must.NotNil(t, st.Cgroups)
	ps, err := proc.ReadStat(st.Pid)
	must.NoError(t, err)
	must.False(t, ps.Exited(), must.Sprint("the task outlived its agent"))

	d := newTestDriver(t)
	must.NoError(t, d.RecoverTask(saved))
	u := busyStats(t, d, cfg.ID)
	must.MapContainsKey(t, u.Pids, fmt.Sprint(st.Pid))

	must.NoError(t, d.DestroyTask(cfg.ID, true))
	waitGone(t, st.Pid)
	for _, p := range st.Cgroups.Paths {
		_, err := os.Stat(p)
		must.True(t, os.IsNotExist(err), must.Sprintf("cgroup %s removed", p))
	}
}
