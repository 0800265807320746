// Package devagent tests the README's promise with the real binary: the dev
// agent starts, `job run` of the README's example runs a real process, and
// `job stop` kills it.
package devagent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nomad-edge/nomad/e2e/internal/ports"
	"github.com/shoenig/test/must"
)

var nomadBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "nomad-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	nomadBin = filepath.Join(dir, "nomad")
	build := exec.Command("go", "build", "-o", nomadBin, "../..")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building nomad:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func freePort(t *testing.T) int { return ports.Free(t, false) }

type devAgent struct {
	addr string
	cmd  *exec.Cmd
	log  *bytes.Buffer
}

// startAgent runs `nomad agent -dev` on free ports and waits for its node.
func startAgent(t *testing.T) *devAgent {
	t.Helper()
	dir := t.TempDir()
	return startAgentIn(t, dir, "-dev", "-data-dir", filepath.Join(dir, "data"))
}

// startAgentIn runs an agent with its config in dir (written with free
// ports unless there) and flags; a second call on the same dir starts it
// again on the same ports.
func startAgentIn(t *testing.T, dir string, flags ...string) *devAgent {
	t.Helper()
	cfg := filepath.Join(dir, "agent.hcl")
	if _, err := os.Stat(cfg); err != nil {
		http, rpc := freePort(t), freePort(t)
		must.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf("ports {\n  http = %d\n  rpc = %d\n}\n", http, rpc)), 0o644))
	}
	var ports struct{ http int }
	b, err := os.ReadFile(cfg)
	must.NoError(t, err)
	_, err = fmt.Sscanf(string(b), "ports {\n  http = %d", &ports.http)
	must.NoError(t, err)
	a := &devAgent{addr: fmt.Sprintf("http://127.0.0.1:%d", ports.http), log: &bytes.Buffer{}}
	a.cmd = exec.Command(nomadBin, append([]string{"agent", "-config", cfg}, flags...)...)
	a.cmd.Stdout, a.cmd.Stderr = a.log, a.log
	must.NoError(t, a.cmd.Start())
	t.Cleanup(func() {
		_ = a.cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- a.cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = a.cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("agent log:\n%s", a.log.String())
		}
	})
	pollUntil(t, 20*time.Second, "dev agent node ready", func() (bool, string) {
		var nodes []struct{ Status string }
		if err := a.get("/v1/nodes", &nodes); err != nil {
			return false, err.Error()
		}
		return len(nodes) == 1 && nodes[0].Status == "ready", fmt.Sprintf("nodes: %+v", nodes)
	})
	return a
}

func (a *devAgent) get(path string, out any) error {
	resp, err := http.Get(a.addr + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// nomad runs the CLI against the agent.
func (a *devAgent) nomad(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(nomadBin, args...)
	cmd.Env = append(os.Environ(), "NOMAD_ADDR="+a.addr)
	out, err := cmd.CombinedOutput()
	code := 0
	if exitErr, ok := err.(*exec.ExitError); ok {
		code = exitErr.ExitCode()
	} else if err != nil {
		t.Fatalf("running nomad %v: %v", args, err)
	}
	return string(out), code
}

// pollUntil checks cond until it holds; on timeout it fails with what it
// last saw. Real processes take real time: there is no event to wait on.
func pollUntil(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) time.Duration {
	t.Helper()
	start := time.Now()
	var seen string
	for time.Since(start) < timeout {
		ok, s := cond()
		if ok {
			return time.Since(start)
		}
		seen = s
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s: not after %v; last saw: %s", what, timeout, seen)
	return 0
}

// pidsWithAllocID finds processes whose environment carries the alloc ID:
// raw_exec tasks get NOMAD_ALLOC_ID, so this finds exactly this task.
func pidsWithAllocID(allocID string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	needle := []byte("NOMAD_ALLOC_ID=" + allocID + "\x00")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && bytes.Contains(env, needle) {
			pids = append(pids, pid)
		}
	}
	return pids
}

type allocStub struct {
	ID, ClientStatus, DesiredStatus string
}

// The README's tour: the example job's raw_exec task really runs, shows as
// running, and `job stop` kills the process.
func TestDevAgent_ReadmeExample(t *testing.T) {
	a := startAgent(t)

	out, code := a.nomad(t, "job", "run", "../../example.nomad.hcl")
	must.Eq(t, 0, code, must.Sprint(out))
	must.StrContains(t, out, `finished with status "complete"`)

	var allocs []allocStub
	took := pollUntil(t, 10*time.Second, "example allocation running", func() (bool, string) {
		if err := a.get("/v1/job/example/allocations", &allocs); err != nil {
			return false, err.Error()
		}
		return len(allocs) == 1 && allocs[0].ClientStatus == "running", fmt.Sprintf("%+v", allocs)
	})
	t.Logf("allocation running %v after job run returned (README promises within 2s)", took)

	pids := pidsWithAllocID(allocs[0].ID)
	must.Len(t, 1, pids, must.Sprint("the sleep task is a real process"))
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pids[0]))
	must.NoError(t, err)
	must.StrContains(t, string(cmdline), "sleep")

	status, code := a.nomad(t, "job", "status", "example")
	must.Eq(t, 0, code, must.Sprint(status))
	must.StrContains(t, status, "Task Group  Queued  Starting  Running  Failed  Complete  Lost  Unknown")

	alloc, code := a.nomad(t, "alloc", "status", allocs[0].ID[:8])
	must.Eq(t, 0, code, must.Sprint(alloc))
	must.StrContains(t, alloc, "Client Status       = running")

	out, code = a.nomad(t, "job", "stop", "example")
	must.Eq(t, 0, code, must.Sprint(out))
	pollUntil(t, 15*time.Second, "task process gone after job stop", func() (bool, string) {
		left := pidsWithAllocID(allocs[0].ID)
		return len(left) == 0, fmt.Sprintf("pids still running: %v", left)
	})
	pollUntil(t, 10*time.Second, "allocation complete", func() (bool, string) {
		if err := a.get("/v1/job/example/allocations", &allocs); err != nil {
			return false, err.Error()
		}
		return allocs[0].ClientStatus == "complete" && allocs[0].DesiredStatus == "stop", fmt.Sprintf("%+v", allocs)
	})
}

// Bad input reaches the operator as a clear error and registers nothing.
func TestDevAgent_BadJobFile(t *testing.T) {
	a := startAgent(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.nomad.hcl")
	must.NoError(t, os.WriteFile(bad, []byte(`job "bad" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      service {
        name = "web"
      }
    }
  }
}
`), 0o644))
	out, code := a.nomad(t, "job", "run", bad)
	must.Eq(t, 1, code, must.Sprint(out))
	must.StrContains(t, out, "bad.nomad.hcl:5:7")
	must.StrContains(t, out, `"service"`)

	var jobs []struct{ ID string }
	must.NoError(t, a.get("/v1/jobs", &jobs))
	must.SliceEmpty(t, jobs)

	negative := filepath.Join(dir, "negative.nomad.hcl")
	must.NoError(t, os.WriteFile(negative, []byte(strings.ReplaceAll(`job "neg" {
  group "g" {
    count = -1
    task "t" {
      driver = "mock_driver"
    }
  }
}
`, "\t", "  ")), 0o644))
	out, code = a.nomad(t, "job", "run", negative)
	must.NotEq(t, 0, code, must.Sprint(out))
	must.StrContains(t, out, "count can't be negative")
	must.NoError(t, a.get("/v1/jobs", &jobs))
	must.SliceEmpty(t, jobs)
}
