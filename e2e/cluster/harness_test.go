// Package cluster runs production clusters of the real binary on loopback:
// three `nomad agent` servers with their state on disk and client agents,
// each a separate process with its own ports, data dir and HCL config file
// in upstream's keys, the way an operator would run them. The tests kill,
// stop and restart those processes and check what survives. Most need no
// root: every listener is on 127.0.0.1. The partition tests
// (partition_test.go) put every agent in a network namespace of its own on
// a private bridge (fabric_test.go) and cut links for real; they need root
// and iproute2, and skip saying so elsewhere.
package cluster

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	nomadapi "github.com/hashicorp/nomad/api"
	e2eports "github.com/nomad-edge/nomad/e2e/internal/ports"
	"github.com/shoenig/test/must"
)

var nomadBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "nomad-cluster-e2e-")
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
	// Every test kills its agents; one left running is a harness bug that
	// would hold ports and CPU after the run. Say so, fail, and kill it.
	if left := pidsWithCmdline(nomadBin); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "agents outlived their tests (killed now): pids %v\n", left)
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		code = 1
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// pidsWithCmdline finds processes whose command line mentions s.
func pidsWithCmdline(s string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmd, []byte(s)) && alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// ports are one agent's listeners.
type ports struct{ HTTP, RPC, Serf int }

// freePorts picks ports that are free now for TCP and, for serf's gossip,
// UDP too.
func freePorts(t testing.TB) ports {
	t.Helper()
	return ports{HTTP: freePort(t, false), RPC: freePort(t, false), Serf: freePort(t, true)}
}

// freePort picks a port below the kernel's ephemeral range (see
// ports.Free).
func freePort(t testing.TB, udpToo bool) int { return e2eports.Free(t, udpToo) }

// agentProc is one agent process, which a test may kill and start again
// on the same data dir and config. Its output goes to a log file that
// outlives restarts.
type agentProc struct {
	t       testing.TB
	name    string
	dataDir string
	cfgPath string
	logPath string
	ports   ports
	starts  int
	// ip is the address the agent listens on; netns, when set, the network
	// namespace it runs in.
	ip    string
	netns string

	// mu guards cur: watchers in other goroutines ask whether the agent
	// runs while the test restarts it.
	mu  sync.Mutex
	cur *run
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

func newAgentProc(t testing.TB, base, name string, p ports, config string) *agentProc {
	t.Helper()
	a := &agentProc{
		t:       t,
		name:    name,
		dataDir: filepath.Join(base, name, "data"),
		cfgPath: filepath.Join(base, name, "agent.hcl"),
		logPath: filepath.Join(base, name, "agent.log"),
		ports:   p,
		ip:      "127.0.0.1",
	}
	must.NoError(t, os.MkdirAll(filepath.Dir(a.cfgPath), 0o755))
	must.NoError(t, os.WriteFile(a.cfgPath, []byte(strings.ReplaceAll(config, "@DATA_DIR@", a.dataDir)), 0o644))
	return a
}

func (a *agentProc) current() *run {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cur
}

// start runs `nomad agent -config <file>`; the config names everything.
func (a *agentProc) start() {
	a.t.Helper()
	must.False(a.t, a.running(), must.Sprintf("%s is already running", a.name))
	a.starts++
	logf, err := os.OpenFile(a.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	must.NoError(a.t, err)
	fmt.Fprintf(logf, "\n===== e2e: start #%d of %s at %s =====\n", a.starts, a.name, time.Now().Format(time.RFC3339Nano))
	argv := []string{nomadBin, "agent", "-config", a.cfgPath}
	if a.netns != "" {
		// ip netns exec execs the agent: its PID is the agent's.
		argv = append([]string{"ip", "netns", "exec", a.netns}, argv...)
	}
	r := &run{cmd: exec.Command(argv[0], argv[1:]...), exited: make(chan struct{})}
	r.cmd.Stdout, r.cmd.Stderr = logf, logf
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

func (a *agentProc) running() bool {
	r := a.current()
	return r != nil && !r.done()
}

func (a *agentProc) pid() int { return a.current().cmd.Process.Pid }

func (a *agentProc) signal(sig os.Signal) {
	if r := a.current(); r != nil && !r.done() {
		_ = r.cmd.Process.Signal(sig)
	}
}

// kill9 is a crash: SIGKILL, nothing flushed, nothing said to peers.
func (a *agentProc) kill9() {
	a.t.Helper()
	r := a.current()
	if r == nil || r.done() {
		return
	}
	r.stopping.Store(true)
	_ = r.cmd.Process.Kill()
	<-r.exited
}

// stop is an operator's stop: SIGTERM, then SIGKILL after 20s.
func (a *agentProc) stop() {
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
		// The stack dump shows where its shutdown hung.
		a.t.Errorf("%s did not stop within 20s of SIGTERM; dumping its stacks (in its log) and killing it", a.name)
		_ = r.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-r.exited:
		case <-time.After(2 * time.Second):
		}
		a.kill9()
	}
}

// waitExit waits for the process to exit by itself and returns its exit
// code, failing the test if it is still running after timeout.
func (a *agentProc) waitExit(timeout time.Duration) int {
	a.t.Helper()
	r := a.current()
	select {
	case <-r.exited:
		return r.cmd.ProcessState.ExitCode()
	case <-time.After(timeout):
		a.t.Fatalf("%s still running after %v; it should have exited", a.name, timeout)
		return 0
	}
}

// exitCode is the exit code of the last run, or -1 while it runs.
func (a *agentProc) exitCode() int {
	r := a.current()
	if r == nil || !r.done() {
		return -1
	}
	return r.cmd.ProcessState.ExitCode()
}

// mustNotHaveDied fails the test, with the end of the agent's log, when
// the agent exited without the test stopping it: a cluster missing a
// member for that reason would otherwise time out saying less.
func (a *agentProc) mustNotHaveDied() {
	a.t.Helper()
	r := a.current()
	if r == nil || !r.done() || r.stopping.Load() {
		return
	}
	log := a.log()
	a.t.Fatalf("%s exited by itself with code %d; its log ends:\n%s", a.name, r.cmd.ProcessState.ExitCode(), log[max(0, len(log)-3000):])
}

func (a *agentProc) log() string {
	buf, _ := os.ReadFile(a.logPath)
	return string(buf)
}

func (a *agentProc) httpAddr() string { return fmt.Sprintf("http://%s:%d", a.ip, a.ports.HTTP) }
func (a *agentProc) rpcAddr() string  { return fmt.Sprintf("%s:%d", a.ip, a.ports.RPC) }

// api is the official Go client pointed at this agent.
func (a *agentProc) api() *nomadapi.Client {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.client == nil {
		c, err := nomadapi.NewClient(&nomadapi.Config{Address: a.httpAddr(), WaitTime: time.Second})
		must.NoError(a.t, err)
		a.client = c
	}
	return a.client
}

// leader is this agent's view of the leader's RPC address; "" when it
// knows none or does not answer.
func (a *agentProc) leader() string {
	if !a.running() {
		return ""
	}
	l, err := a.api().Status().Leader()
	if err != nil {
		return ""
	}
	return l
}

// cluster is N servers and M clients of one region on loopback.
type cluster struct {
	t       testing.TB
	dir     string
	servers []*agentProc
	clients []*agentProc
	// extra are agents a test made itself (addAgent).
	extra []*agentProc
}

// clusterOpts shapes a cluster; zero values are the defaults.
type clusterOpts struct {
	servers, clients int
	// expect returns server i's bootstrap_expect; nil is `servers` for all.
	expect func(i int) int
	// serverExtra is appended to every server's config file.
	serverExtra string
}

// newCluster writes every agent's config and registers the cleanup that
// kills each process by PID (and the tasks the clients started), printing
// every agent's log when the test failed. It starts nothing.
func newCluster(t testing.TB, o clusterOpts) *cluster {
	t.Helper()
	c := &cluster{t: t, dir: t.TempDir()}
	sp := make([]ports, o.servers)
	for i := range sp {
		sp[i] = freePorts(t)
	}
	var rpcs []string
	for _, p := range sp {
		rpcs = append(rpcs, fmt.Sprintf("%q", fmt.Sprintf("127.0.0.1:%d", p.RPC)))
	}
	for i, p := range sp {
		var join []string
		for j, q := range sp {
			if j != i {
				join = append(join, fmt.Sprintf("%q", fmt.Sprintf("127.0.0.1:%d", q.Serf)))
			}
		}
		expect := o.servers
		if o.expect != nil {
			expect = o.expect(i)
		}
		name := fmt.Sprintf("server-%d", i+1)
		c.servers = append(c.servers, newAgentProc(t, c.dir, name, p, serverConfig(name, p, expect, join)+o.serverExtra))
	}
	for i := range o.clients {
		name := fmt.Sprintf("client-%d", i+1)
		p := ports{HTTP: freePort(t, false)}
		c.clients = append(c.clients, newAgentProc(t, c.dir, name, p, clientConfig(name, p, rpcs)))
	}
	t.Cleanup(c.cleanup)
	return c
}

func serverConfig(name string, p ports, expect int, join []string) string {
	return serverConfigAt(name, "127.0.0.1", p, expect, join)
}

func serverConfigAt(name, bind string, p ports, expect int, join []string) string {
	return fmt.Sprintf(`name      = %q
data_dir  = "@DATA_DIR@"
bind_addr = %q
log_level = "INFO"

ports {
  http = %d
  rpc  = %d
  serf = %d
}

server {
  enabled          = true
  bootstrap_expect = %d

  # Short node TTLs, so a client's heartbeats to a dead server matter.
  min_heartbeat_ttl = "2s"
  heartbeat_grace   = "2s"

  server_join {
    retry_join     = [%s]
    retry_interval = "1s"
  }
}
`, name, bind, p.HTTP, p.RPC, p.Serf, expect, strings.Join(join, ", "))
}

func clientConfig(name string, p ports, servers []string) string {
	return clientConfigAt(name, "127.0.0.1", p, servers)
}

func clientConfigAt(name, bind string, p ports, servers []string) string {
	return fmt.Sprintf(`name      = %q
data_dir  = "@DATA_DIR@"
bind_addr = %q
log_level = "INFO"

ports {
  http = %d
}

client {
  enabled = true
  servers = [%s]
}

plugin "raw_exec" {
  config {
    enabled = true
  }
}
`, name, bind, p.HTTP, strings.Join(servers, ", "))
}

func (c *cluster) all() []*agentProc {
	return append(append(append([]*agentProc{}, c.servers...), c.clients...), c.extra...)
}

func (c *cluster) cleanup() {
	for _, a := range c.all() {
		if r := a.current(); c.t.Failed() && r != nil && !r.done() {
			// A Go process dumps every goroutine's stack on SIGQUIT: the
			// log then shows where a stuck agent was stuck.
			a.signal(syscall.SIGQUIT)
			select {
			case <-r.exited:
			case <-time.After(2 * time.Second):
			}
		}
		a.kill9()
	}
	// Client agents leave their tasks running on purpose (the next agent
	// re-attaches); at the end of a test nothing may outlive it.
	var cgroups []string
	for _, pid := range pidsWithEnv(c.dir) {
		cgroups = append(cgroups, taskCgroups(pid)...)
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	removeCgroups(cgroups)
	if c.t.Failed() {
		c.keepLogs()
	}
}

// keepLogs copies every agent's log out of the test's data dir, which is
// removed, and prints where, with each log's last lines: a long run's
// logs would bury the failure in a CI log's tail.
func (c *cluster) keepLogs() {
	dir, err := os.MkdirTemp("", "nomad-e2e-logs-")
	if err != nil {
		c.t.Logf("keeping agent logs: %v", err)
	}
	for _, a := range c.all() {
		log := a.log()
		kept := "(not kept)"
		if dir != "" {
			path := filepath.Join(dir, a.name+".log")
			if os.WriteFile(path, []byte(log), 0o644) == nil {
				kept = path
			}
		}
		// The stack dump cleanup asked for is in the kept file; the lines
		// before it are what the agent was doing.
		if i := strings.Index(log, "SIGQUIT: quit"); i >= 0 {
			log = log[:i]
		}
		c.t.Logf("----- log of %s (%s), kept at %s; its last lines before any stack dump -----\n%s", a.name, a.cfgPath, kept, lastLines(log, 30))
	}
}

// lastLines is the end of s, n lines at most.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// startServers starts every server and waits until all of them know the
// same leader; it returns how long that took.
func (c *cluster) startServers() time.Duration {
	c.t.Helper()
	start := time.Now()
	for _, s := range c.servers {
		s.start()
	}
	c.waitLeader(30*time.Second, "")
	return time.Since(start)
}

// waitLeader waits until every running server names the same leader,
// other than notThis, and returns the server that leads.
func (c *cluster) waitLeader(timeout time.Duration, notThis string) *agentProc {
	c.t.Helper()
	var leader *agentProc
	pollUntil(c.t, timeout, "every running server agrees on one leader", func() (bool, string) {
		views := map[string]string{}
		agreed := ""
		for _, s := range c.servers {
			s.mustNotHaveDied()
			if !s.running() {
				continue
			}
			l := s.leader()
			views[s.name] = l
			if l == "" || l == notThis || (agreed != "" && l != agreed) {
				return false, fmt.Sprintf("leader views: %v", views)
			}
			agreed = l
		}
		leader = c.serverByRPC(agreed)
		return leader != nil && leader.running(), fmt.Sprintf("leader views: %v", views)
	})
	return leader
}

// waitVoters waits until the leader's raft configuration holds exactly
// every server of the cluster, each a voter, and one of them
// leader: a restarted server is then back in the cluster, not merely up.
func (c *cluster) waitVoters(timeout time.Duration) {
	c.t.Helper()
	want := map[string]bool{}
	for _, s := range c.servers {
		want[s.rpcAddr()] = true
	}
	pollUntil(c.t, timeout, "every server a voter in the raft configuration", func() (bool, string) {
		cfg, err := c.anyServer().api().Operator().RaftGetConfiguration(nil)
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		voters, leaders := 0, 0
		for _, srv := range cfg.Servers {
			seen = append(seen, fmt.Sprintf("%s voter=%v leader=%v", srv.Address, srv.Voter, srv.Leader))
			if want[srv.Address] && srv.Voter {
				voters++
			}
			if srv.Leader {
				leaders++
			}
		}
		return voters == len(want) && len(cfg.Servers) == len(want) && leaders == 1, strings.Join(seen, "; ")
	})
}

func (c *cluster) serverByRPC(addr string) *agentProc {
	for _, s := range c.servers {
		if s.rpcAddr() == addr {
			return s
		}
	}
	return nil
}

// anyServer is a running server. Tests read through it without stale, as
// a user does: the read is forwarded to the leader. (A stale read of a
// follower just restarted lags until the new leader's first commit
// reaches it: raft re-applies a restarted server's log only then.)
func (c *cluster) anyServer() *agentProc {
	for _, s := range c.servers {
		if s.running() {
			return s
		}
	}
	c.t.Fatal("no server is running")
	return nil
}

// startClients starts every client and waits until all their nodes are
// ready.
func (c *cluster) startClients() {
	c.t.Helper()
	for _, cl := range c.clients {
		cl.start()
	}
	pollUntil(c.t, 30*time.Second, "every client's node ready", func() (bool, string) {
		for _, cl := range c.clients {
			cl.mustNotHaveDied()
		}
		nodes, _, err := c.anyServer().api().Nodes().List(nil)
		if err != nil {
			return false, err.Error()
		}
		ready := 0
		var seen []string
		for _, n := range nodes {
			seen = append(seen, n.Name+"="+n.Status)
			if n.Status == "ready" {
				ready++
			}
		}
		return ready == len(c.clients), strings.Join(seen, ", ")
	})
}

// pollUntil checks cond until it holds; on timeout it fails with what it
// last saw. Real processes take real time: there is no event to wait on.
func pollUntil(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) time.Duration {
	t.Helper()
	start := time.Now()
	var seen string
	for time.Since(start) < timeout {
		ok, s := cond()
		if ok {
			return time.Since(start)
		}
		seen = s
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: not after %v; last saw: %s", what, timeout, seen)
	return 0
}

// pidsWithEnv finds processes whose environment mentions s. A raw_exec
// task's environment carries its alloc dir, under its client's data dir.
func pidsWithEnv(s string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	needle := []byte(s)
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

// taskCgroups are the cgroups the driver made for pid's task (raw_exec
// gives each task one, under nomad/ or nomad.slice/, when the agent is
// root), read from /proc/<pid>/cgroup.
func taskCgroups(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 || !(strings.HasPrefix(f[2], "/nomad/") || strings.HasPrefix(f[2], "/nomad.slice/")) {
			continue
		}
		out = append(out, filepath.Join("/sys/fs/cgroup", f[1], f[2])) // f[1] is empty on v2
	}
	return out
}

// removeCgroups removes the killed tasks' cgroups: the agents that would
// have are gone. The kernel empties a cgroup a moment after its last
// process died; until then rmdir says EBUSY.
func removeCgroups(dirs []string) {
	for _, d := range dirs {
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if err := os.Remove(d); err == nil || os.IsNotExist(err) || time.Now().After(deadline) {
				break
			}
		}
	}
}

// alive says whether pid is a live process (not a zombie).
func alive(pid int) bool {
	buf, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	_, after, ok := bytes.Cut(buf, []byte(") "))
	return ok && len(after) > 0 && after[0] != 'Z'
}
