package upstreamstate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// upstreamBinary is the upstream Nomad 1.6.5 agent (../shared/tools, see
// its README), unpacked; UPSTREAM_NOMAD names another place.
func upstreamBinary(t *testing.T) string {
	t.Helper()
	p := os.Getenv("UPSTREAM_NOMAD")
	if p == "" {
		p = "/tmp/up/nomad"
	}
	if _, err := os.Stat(p); err != nil {
		t.Skipf("upstream Nomad 1.6.5 is not at %s (%v): unpack ../shared/tools/nomad-1.6.5.gz there, or set UPSTREAM_NOMAD", p, err)
	}
	return p
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestRead_Upstream runs the upstream agent (server and client) with a
// raw_exec task, stops it with SIGINT, and reads its data_dir: the node
// and allocation are the ones its API showed, and the PIDs read are the
// task's running process and its executor, which outlived the agent.
func TestRead_Upstream(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the upstream agent for about 20s")
	}
	bin := upstreamBinary(t)
	work := t.TempDir()
	dataDir := filepath.Join(work, "data")
	httpPort, rpcPort, serfPort := freePort(t), freePort(t), freePort(t)
	conf := fmt.Sprintf(`data_dir = %q
bind_addr = "127.0.0.1"
disable_update_check = true
ports {
  http = %d
  rpc  = %d
  serf = %d
}
advertise {
  http = "127.0.0.1"
  rpc  = "127.0.0.1"
  serf = "127.0.0.1"
}
consul {
  server_auto_join = false
  client_auto_join = false
  auto_advertise   = false
}
server {
  enabled          = true
  bootstrap_expect = 1
}
client {
  enabled = true
  servers = ["127.0.0.1:%d"]
}
plugin "raw_exec" {
  config {
    enabled = true
  }
}
`, dataDir, httpPort, rpcPort, serfPort, rpcPort)
	must.NoError(t, os.WriteFile(filepath.Join(work, "agent.hcl"), []byte(conf), 0o600))
	job := `job "sleeper" {
  datacenters = ["*"]
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["3600"]
      }
      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
`
	must.NoError(t, os.WriteFile(filepath.Join(work, "sleeper.nomad"), []byte(job), 0o600))

	logf, err := os.Create(filepath.Join(work, "agent.log"))
	must.NoError(t, err)
	defer logf.Close()
	agent := exec.Command(bin, "agent", "-config", filepath.Join(work, "agent.hcl"))
	agent.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + work}
	agent.Stdout, agent.Stderr = logf, logf
	agent.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	must.NoError(t, agent.Start())
	var helpers []int // what the agent started: logmon, executor, the task
	t.Cleanup(func() {
		if agent.ProcessState == nil {
			_ = agent.Process.Kill()
			_, _ = agent.Process.Wait()
		}
		cgroups := nomadCgroups(helpers)
		for _, pid := range helpers {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		unmountUnder(dataDir)
		if err := removeCgroups(cgroups); err != nil {
			t.Logf("left a cgroup of the upstream agent's: %v", err)
		}
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(work, "agent.log"))
			t.Logf("agent log:\n%s", b)
		}
	})

	addr := fmt.Sprintf("http://127.0.0.1:%d", httpPort)
	var nodes []struct{ ID, Status string }
	waitFor(t, 60*time.Second, "the upstream client to be ready", func() bool {
		return getJSON(addr+"/v1/nodes", &nodes) == nil && len(nodes) == 1 && nodes[0].Status == "ready"
	})
	run := exec.Command(bin, "job", "run", "-detach", filepath.Join(work, "sleeper.nomad"))
	run.Env = []string{"PATH=/usr/bin:/bin", "NOMAD_ADDR=" + addr}
	out, err := run.CombinedOutput()
	must.NoError(t, err, must.Sprint(string(out)))
	var allocs []struct{ ID, ClientStatus string }
	waitFor(t, 60*time.Second, "the allocation to run", func() bool {
		return getJSON(addr+"/v1/job/sleeper/allocations", &allocs) == nil && len(allocs) == 1 && allocs[0].ClientStatus == "running"
	})
	// The client writes the task's handle just after it reports it
	// running; give it a moment to be sure of a settled file.
	time.Sleep(2 * time.Second)
	helpers = descendants(agent.Process.Pid)

	// While the agent runs, it holds state.db.
	_, err = Read(dataDir, Options{LockTimeout: 200 * time.Millisecond})
	must.ErrorIs(t, err, ErrLocked)

	must.NoError(t, agent.Process.Signal(syscall.SIGINT))
	done := make(chan error, 1)
	go func() { done <- agent.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the upstream agent did not stop within 30s of SIGINT")
	}

	node, err := Read(dataDir, Options{})
	must.NoError(t, err)
	must.Eq(t, nodes[0].ID, node.NodeID)
	must.Len(t, 1, node.Allocs)
	a := node.Allocs[0]
	must.Eq(t, allocs[0].ID, a.ID)
	must.Eq(t, "sleeper", a.JobID)
	must.Eq(t, "g", a.TaskGroup)
	must.Eq(t, "running", a.ClientStatus)
	must.Len(t, 1, a.Tasks)
	task := a.Tasks[0]
	must.Eq(t, "t", task.Name)
	must.Eq(t, "raw_exec", task.Driver)
	pid := task.RunningPID()
	must.Positive(t, pid)

	// The task outlived the agent, under its executor: the PIDs read are
	// those processes.
	must.SliceContains(t, helpers, pid)
	must.SliceContains(t, helpers, task.Handle.ExecutorPID)
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	must.NoError(t, err, must.Sprint("the task's process is gone after SIGINT"))
	must.Eq(t, task.Handle.ExecutorPID, ppid(st))
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	must.NoError(t, err)
	must.True(t, bytes.Contains(env, []byte("NOMAD_ALLOC_ID="+a.ID+"\x00")))
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	must.NoError(t, err)
	must.Eq(t, "/bin/sleep\x003600\x00", string(cmdline))
}

func getJSON(url string, out any) error {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errors.New(resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

func waitFor(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", d, what)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// ppid is the parent PID in a /proc/<pid>/stat line.
func ppid(stat []byte) int {
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(f[1])
	return n
}

// descendants are every process under pid.
func descendants(root int) []int {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		children[ppid(st)] = append(children[ppid(st)], pid)
	}
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// unmountUnder detaches what the upstream client mounted under dir (a
// tmpfs on each task's secrets dir when it runs as root), so that the
// test's directory can be removed.
func unmountUnder(dir string) {
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && strings.HasPrefix(f[1], dir+"/") {
			_ = syscall.Unmount(f[1], syscall.MNT_DETACH)
		}
	}
}

// nomadCgroups are the cgroups upstream made for the processes pids (a
// freezer cgroup per raw_exec task on cgroups v1), as directories.
func nomadCgroups(pids []int) []string {
	var out []string
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.SplitN(line, ":", 3)
			if len(f) != 3 || !strings.HasPrefix(f[2], "/nomad/") || f[2] == "/nomad/shared" {
				continue
			}
			ctrl := strings.TrimPrefix(strings.Split(f[1], ",")[0], "name=")
			if ctrl == "" {
				ctrl = "unified"
			}
			out = append(out, filepath.Join("/sys/fs/cgroup", ctrl, f[2]))
		}
	}
	return out
}

// removeCgroups removes the cgroup dirs once the processes in them have
// exited.
func removeCgroups(dirs []string) error {
	deadline := time.Now().Add(5 * time.Second)
	var errs []error
	for _, d := range dirs {
		for {
			err := syscall.Rmdir(d)
			if err == nil || errors.Is(err, syscall.ENOENT) {
				break
			}
			if time.Now().After(deadline) {
				errs = append(errs, fmt.Errorf("%s: %w", d, err))
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return errors.Join(errs...)
}
