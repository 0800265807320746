package harness

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

// DataDirVar stands for the agent's data dir in its Config and Args.
const DataDirVar = "@DATA_DIR@"

// AgentConfig is how one agent is started.
type AgentConfig struct {
	// Name is the agent's directory under Agents.Dir, and how logs and
	// failures name it.
	Name string
	// Config is the agent's HCL config file (none when empty).
	Config string
	// Args are more flags for `nomad agent`, after -config.
	Args []string
	// Ports are the agent's listeners, on IP (127.0.0.1 when empty).
	Ports Ports
	IP    string
	// Netns, when set, is the network namespace the agent runs in, entered
	// with `ip netns exec` (which execs the agent: its PID is the
	// agent's). NetOnly enters the namespace's network only, with
	// nsenter: `ip netns exec` also mounts a sysfs of the namespace over
	// /sys, which hides /sys/fs/cgroup, and an agent whose drivers need
	// the host's mounts (the exec driver's cgroups, a container engine's
	// socket) must see them.
	Netns   string
	NetOnly bool
	// Program, when set, is run instead of `nomad agent`: a program that
	// is not ours (the Nomad Autoscaler, see Tool) which the test starts,
	// stops and kills as it does an agent, cleaned up and logged the same
	// way. Args are then its whole command line, where ConfigVar stands
	// for Config's file; the methods that talk to a nomad agent (API,
	// Leader, Nomad) do not apply to it.
	Program string
	// Bin, when set, is another agent binary to run instead of ours
	// (the upstream agent of a compatibility test; see foreign.go).
	Bin string
	// FaultClock runs ours built with the faultclock tag (FaultClockBin),
	// its wall clock stepped by SetClockOffset.
	FaultClock bool
}

// Agents are one test's agent processes. Its cleanup, registered by
// NewAgents, kills every agent with SIGKILL (first making each dump its
// stacks when the test failed), then every task process they left (see
// KillTasks; client agents leave their tasks running on purpose, for the
// next agent to re-attach to), and, when the test failed, keeps every
// agent's log in a file and prints where with the log's last lines.
type Agents struct {
	// Dir holds every agent's config, data dir and log, and is removed
	// after the cleanup.
	Dir string
	t   testing.TB

	mu     sync.Mutex
	agents []*Agent
	marks  []string
}

// NewAgents makes the set of agents of a test and registers its cleanup;
// it starts nothing.
func NewAgents(t testing.TB) *Agents {
	t.Helper()
	ags := &Agents{t: t, Dir: t.TempDir()}
	// A raw_exec task's environment names its alloc dir, under its
	// client's data dir.
	ags.marks = []string{ags.Dir + string(filepath.Separator)}
	live.Lock()
	live.agents[ags] = true
	live.Unlock()
	t.Cleanup(ags.cleanup)
	return ags
}

// Add writes an agent's config file; it does not start it. It skips the
// test where the agent could not enter its namespace.
func (ags *Agents) Add(cfg AgentConfig) *Agent {
	t := ags.t
	t.Helper()
	if cfg.NetOnly {
		if _, err := exec.LookPath("nsenter"); err != nil {
			t.Skipf("%s runs in a namespace's network only, which needs util-linux's nsenter", cfg.Name)
		}
	}
	base := filepath.Join(ags.Dir, cfg.Name)
	a := &Agent{
		Name:    cfg.Name,
		DataDir: filepath.Join(base, "data"),
		LogPath: filepath.Join(base, "agent.log"),
		Ports:   cfg.Ports,
		IP:      cfg.IP,
		Args:    cfg.Args,
		t:       t,
		netns:   cfg.Netns,
		netOnly: cfg.NetOnly,
		program: cfg.Program,
		bin:     cfg.Bin,
	}
	if cfg.FaultClock {
		a.UseFaultClock()
	}
	if a.IP == "" {
		a.IP = "127.0.0.1"
	}
	must.NoError(t, os.MkdirAll(base, 0o755))
	if cfg.Program != "" {
		// A nomad agent makes its data dir; another program gets one
		// ready, for whatever it keeps (the autoscaler's plugin_dir).
		must.NoError(t, os.MkdirAll(a.DataDir, 0o755))
	}
	if cfg.Config != "" {
		a.CfgPath = filepath.Join(base, "agent.hcl")
		must.NoError(t, os.WriteFile(a.CfgPath, []byte(strings.ReplaceAll(cfg.Config, DataDirVar, a.DataDir)), 0o644))
	}
	ags.mu.Lock()
	ags.agents = append(ags.agents, a)
	ags.mu.Unlock()
	return a
}

// All is every agent added, in order.
func (ags *Agents) All() []*Agent {
	ags.mu.Lock()
	defer ags.mu.Unlock()
	return append([]*Agent{}, ags.agents...)
}

// KillAtEnd adds marks (see KillTasks) of task processes the cleanup
// kills: AllocMark of an exec task's allocation, whose environment names
// no host path.
func (ags *Agents) KillAtEnd(marks ...string) {
	ags.mu.Lock()
	defer ags.mu.Unlock()
	ags.marks = append(ags.marks, marks...)
}

func (ags *Agents) taskMarks() []string {
	ags.mu.Lock()
	defer ags.mu.Unlock()
	return append([]string{}, ags.marks...)
}

func (ags *Agents) cleanup() {
	failed := ags.t.Failed()
	for _, a := range ags.All() {
		if r := a.current(); failed && r != nil && !r.done() {
			// A Go process dumps every goroutine's stack on SIGQUIT: the
			// log then shows where a stuck agent was stuck.
			a.Signal(syscall.SIGQUIT)
			select {
			case <-r.exited:
			case <-time.After(2 * time.Second):
			}
		}
		a.Kill9()
	}
	// At the end of a test nothing it started may outlive it.
	KillTasks(ags.taskMarks()...)
	ags.cleanupForeign()
	live.Lock()
	delete(live.agents, ags)
	live.Unlock()
	if failed {
		ags.keepLogs()
	}
}

// keepLogs copies every agent's log out of the test's directory, which is
// removed, and prints where, with each log's last lines: a long run's
// logs would bury the failure in a CI log's tail.
func (ags *Agents) keepLogs() {
	dir, err := os.MkdirTemp("", "nomad-e2e-logs-")
	if err != nil {
		ags.t.Logf("keeping agent logs: %v", err)
	}
	for _, a := range ags.All() {
		log := a.Log()
		kept := "(not kept)"
		if dir != "" {
			path := filepath.Join(dir, a.Name+".log")
			if os.WriteFile(path, []byte(log), 0o644) == nil {
				kept = path
			}
		}
		// The stack dump the cleanup asked for is in the kept file; the
		// lines before it are what the agent was doing.
		if i := strings.Index(log, "SIGQUIT: quit"); i >= 0 {
			log = log[:i]
		}
		ags.t.Logf("----- log of %s (%s), kept at %s; its last lines before any stack dump -----\n%s", a.Name, a.CfgPath, kept, lastLines(log, 30))
	}
}

// lastLines is the end of s, n lines at most.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// Agent is one agent process, which a test may stop or kill and start
// again on the same data dir and config. Its output goes to a log file
// that outlives restarts.
type Agent struct {
	Name    string
	DataDir string
	// CfgPath is its config file, "" when it has none.
	CfgPath string
	LogPath string
	Ports   Ports
	// IP is the address it listens on.
	IP string
	// Args are its flags after -config ("@DATA_DIR@" its data dir), read
	// at every start: a test may change them for the next.
	Args []string

	t       testing.TB
	netns   string
	netOnly bool
	program string
	starts  int
	bin     string // "" runs ours
	// faultBin is ours with the faultclock tag, clockFile its offset
	// file; both "" for an agent without FaultClock.
	faultBin, clockFile string

	// mu guards cur and client: watchers in other goroutines ask whether
	// the agent runs while the test restarts it.
	mu  sync.Mutex
	cur *run
	// clockOffset is what SetClockOffset last wrote.
	clockOffset time.Duration
	// client is made once: a client per call would leave its idle
	// keep-alive connections open until the agent's per-IP limit refuses
	// the test (limits.http_max_conns_per_client).
	client *nomadapi.Client
}

// run is one start of an agent's process.
type run struct {
	cmd    *exec.Cmd
	exited chan struct{}
	// stopping is set when the test itself stops or kills the process.
	stopping atomic.Bool
}

func (r *run) done() bool {
	select {
	case <-r.exited:
		return true
	default:
		return false
	}
}

func (a *Agent) current() *run {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cur
}

// Start runs `nomad agent -config <file> <args>`.
func (a *Agent) Start() {
	a.t.Helper()
	if a.program == "" {
		must.NotEq(a.t, "", a.binary(), must.Sprint("no binary: the suite's TestMain must call harness.Main"))
	}
	must.False(a.t, a.Running(), must.Sprintf("%s is already running", a.Name))
	a.starts++
	logf, err := os.OpenFile(a.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	must.NoError(a.t, err)
	fmt.Fprintf(logf, "\n===== e2e: start #%d of %s at %s =====\n", a.starts, a.Name, time.Now().Format(time.RFC3339Nano))
	argv := []string{a.binary(), "agent"}
	if a.program != "" {
		argv = []string{a.program}
	} else if a.CfgPath != "" {
		argv = append(argv, "-config", a.CfgPath)
	}
	for _, arg := range a.Args {
		argv = append(argv, strings.NewReplacer(DataDirVar, a.DataDir, ConfigVar, a.CfgPath).Replace(arg))
	}
	switch {
	case a.netns != "" && a.netOnly:
		argv = append([]string{"nsenter", "--net=/run/netns/" + a.netns}, argv...)
	case a.netns != "":
		argv = append([]string{"ip", "netns", "exec", a.netns}, argv...)
	}
	r := &run{cmd: exec.Command(argv[0], argv[1:]...), exited: make(chan struct{})}
	r.cmd.Stdout, r.cmd.Stderr = logf, logf
	r.cmd.Env = a.env()
	must.NoError(a.t, r.cmd.Start())
	go func() {
		_ = r.cmd.Wait()
		logf.Close()
		close(r.exited)
	}()
	a.mu.Lock()
	a.cur = r
	a.mu.Unlock()
}

// Starts is how many times the agent was started.
func (a *Agent) Starts() int { return a.starts }

// Running says whether the agent's process runs.
func (a *Agent) Running() bool {
	r := a.current()
	return r != nil && !r.done()
}

// PID is the process ID of the agent's last start.
func (a *Agent) PID() int { return a.current().cmd.Process.Pid }

// Signal sends sig to the agent if it runs.
func (a *Agent) Signal(sig os.Signal) {
	if r := a.current(); r != nil && !r.done() {
		_ = r.cmd.Process.Signal(sig)
	}
}

// Kill9 is a crash: SIGKILL, nothing flushed, nothing said to peers. It
// returns when the process is gone.
func (a *Agent) Kill9() {
	a.t.Helper()
	r := a.current()
	if r == nil || r.done() {
		return
	}
	r.stopping.Store(true)
	_ = r.cmd.Process.Kill()
	<-r.exited
}

// Stop is an operator's stop: SIGTERM, and an error when the agent has
// not stopped 20 s later, after which it is made to dump its stacks (into
// its log: they show where its shutdown hung) and killed.
func (a *Agent) Stop() {
	a.t.Helper()
	r := a.current()
	if r == nil || r.done() {
		return
	}
	r.stopping.Store(true)
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
	case <-time.After(20 * time.Second):
		a.t.Errorf("%s did not stop within 20s of SIGTERM; dumping its stacks (in its log) and killing it", a.Name)
		_ = r.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-r.exited:
		case <-time.After(2 * time.Second):
		}
		a.Kill9()
	}
}

// WaitExit waits for the process to exit by itself and returns its exit
// code, failing the test if it still runs after timeout.
func (a *Agent) WaitExit(timeout time.Duration) int {
	a.t.Helper()
	r := a.current()
	select {
	case <-r.exited:
		return r.cmd.ProcessState.ExitCode()
	case <-time.After(timeout):
		a.t.Fatalf("%s still running after %v; it should have exited", a.Name, timeout)
		return 0
	}
}

// ExitCode is the exit code of the last run, or -1 while it runs.
func (a *Agent) ExitCode() int {
	r := a.current()
	if r == nil || !r.done() {
		return -1
	}
	return r.cmd.ProcessState.ExitCode()
}

// MustNotHaveDied fails the test, with the end of the agent's log, when
// the agent exited without the test stopping it: a cluster missing a
// member for that reason would otherwise time out saying less.
func (a *Agent) MustNotHaveDied() {
	a.t.Helper()
	r := a.current()
	if r == nil || !r.done() || r.stopping.Load() {
		return
	}
	log := a.Log()
	a.t.Fatalf("%s exited by itself with code %d; its log ends:\n%s", a.Name, r.cmd.ProcessState.ExitCode(), log[max(0, len(log)-3000):])
}

// Log is everything the agent wrote, over every start.
func (a *Agent) Log() string {
	buf, _ := os.ReadFile(a.LogPath)
	return string(buf)
}

// HTTPAddr is the agent's HTTP API as a URL.
func (a *Agent) HTTPAddr() string { return fmt.Sprintf("http://%s:%d", a.IP, a.Ports.HTTP) }

// RPCAddr is the agent's RPC listener, as servers name each other.
func (a *Agent) RPCAddr() string { return fmt.Sprintf("%s:%d", a.IP, a.Ports.RPC) }

// API is the official Go client pointed at this agent.
func (a *Agent) API() *nomadapi.Client {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.client == nil {
		c, err := nomadapi.NewClient(&nomadapi.Config{Address: a.HTTPAddr(), WaitTime: time.Second})
		must.NoError(a.t, err)
		a.client = c
	}
	return a.client
}

// Leader is this agent's view of the leader's RPC address; "" when it
// knows none or does not answer.
func (a *Agent) Leader() string {
	if !a.Running() {
		return ""
	}
	l, err := a.API().Status().Leader()
	if err != nil {
		return ""
	}
	return l
}

// getClient is GetJSON's: every call is a quick read, and one to an agent
// cut off must fail rather than wait for TCP to give up.
var getClient = &http.Client{Timeout: 10 * time.Second}

// GetJSON decodes the answer to GET path (/v1/...) of the agent's HTTP
// API into out: for the fields a test reads as raw JSON.
func (a *Agent) GetJSON(path string, out any) error {
	resp, err := getClient.Get(a.HTTPAddr() + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// Nomad runs the CLI against the agent and returns what it printed and
// its exit code.
func (a *Agent) Nomad(args ...string) (string, int) {
	a.t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "NOMAD_ADDR="+a.HTTPAddr())
	out, err := cmd.CombinedOutput()
	code := 0
	if exitErr, ok := err.(*exec.ExitError); ok {
		code = exitErr.ExitCode()
	} else if err != nil {
		a.t.Fatalf("running nomad %v: %v", args, err)
	}
	return string(out), code
}
