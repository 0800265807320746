// Package partition cuts a client off the network for real: the client
// agent runs in its own network namespace, joined to the server by a veth
// pair, and the test takes the link down and up again, or makes it drop
// every packet with iptables. It needs root and iproute2 (and iptables for
// the packet-drop cut); elsewhere it skips and says why.
package partition

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

var nomadBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "nomad-partition-")
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

// netns is a network namespace with a veth link to the host.
type netns struct {
	name, hostIf, hostIP, nsIP string
}

func sh(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// newNetns creates the namespace and link, or skips the test when this
// machine cannot.
func newNetns(t *testing.T) *netns {
	t.Helper()
	if raceEnabled {
		t.Skip("partition tests run the real binary, built without the race detector: nothing to gain from running them again under it")
	}
	if os.Geteuid() != 0 {
		t.Skip("partition tests need root to create network namespaces")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("partition tests need iproute2's ip command")
	}
	id := os.Getpid() % 200
	n := &netns{
		name:   fmt.Sprintf("nomad-e2e-%d", os.Getpid()),
		hostIf: fmt.Sprintf("ne2e%dh", id),
		hostIP: fmt.Sprintf("10.213.%d.1", id),
		nsIP:   fmt.Sprintf("10.213.%d.2", id),
	}
	nsIf := fmt.Sprintf("ne2e%dn", id)
	if out, err := exec.Command("ip", "netns", "add", n.name).CombinedOutput(); err != nil {
		t.Skipf("cannot create a network namespace here: %v: %s", err, out)
	}
	t.Cleanup(func() {
		_ = exec.Command("ip", "link", "del", n.hostIf).Run()
		_ = exec.Command("ip", "netns", "del", n.name).Run()
	})
	sh(t, "ip", "link", "add", n.hostIf, "type", "veth", "peer", "name", nsIf)
	sh(t, "ip", "link", "set", nsIf, "netns", n.name)
	sh(t, "ip", "addr", "add", n.hostIP+"/24", "dev", n.hostIf)
	sh(t, "ip", "link", "set", n.hostIf, "up")
	sh(t, "ip", "netns", "exec", n.name, "ip", "addr", "add", n.nsIP+"/24", "dev", nsIf)
	sh(t, "ip", "netns", "exec", n.name, "ip", "link", "set", nsIf, "up")
	sh(t, "ip", "netns", "exec", n.name, "ip", "link", "set", "lo", "up")
	return n
}

// agent is a nomad agent process.
type agent struct {
	cmd *exec.Cmd
	log *bytes.Buffer
}

func startAgent(t *testing.T, netnsName string, args ...string) *agent {
	t.Helper()
	argv := append([]string{nomadBin, "agent"}, args...)
	if netnsName != "" {
		argv = append([]string{"ip", "netns", "exec", netnsName}, argv...)
	}
	return startArgv(t, argv, args)
}

// startAgentNetOnly runs the agent in the namespace's network only. `ip
// netns exec` also mounts a sysfs of the namespace over /sys, which hides
// /sys/fs/cgroup: the exec driver would find no cgroups there.
func startAgentNetOnly(t *testing.T, netnsName string, args ...string) *agent {
	t.Helper()
	argv := append([]string{"nsenter", "--net=/run/netns/" + netnsName, nomadBin, "agent"}, args...)
	return startArgv(t, argv, args)
}

func startArgv(t *testing.T, argv, args []string) *agent {
	t.Helper()
	a := &agent{cmd: exec.Command(argv[0], argv[1:]...), log: &bytes.Buffer{}}
	a.cmd.Stdout, a.cmd.Stderr = a.log, a.log
	must.NoError(t, a.cmd.Start())
	t.Cleanup(func() {
		_ = a.cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = a.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = a.cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("agent %v log:\n%s", args, a.log.String())
		}
	})
	return a
}

func getJSON(url string, out any) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

func pollUntil(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var seen string
	for time.Now().Before(deadline) {
		ok, s := cond()
		if ok {
			return
		}
		seen = s
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: not within %v; last saw: %s", what, timeout, seen)
}

type nodeStub struct{ ID, Name, Status string }

type allocStub struct {
	ID, NodeID, ClientStatus, DesiredStatus string
	TaskGroup                               string
	TaskStates                              map[string]struct {
		Restarts  uint64
		StartedAt time.Time
	}
}

// edge is a dev server on the host and a client agent in its own network
// namespace running one allocation of a group with a disconnect window.
type edge struct {
	n      *netns
	api    string
	nodeID string
	alloc  allocStub // as first seen running
}

func (e *edge) allocs() []allocStub {
	var list []allocStub
	_ = getJSON(e.api+"/v1/job/edge/allocations", &list)
	return list
}

func (e *edge) nodeStatus() string {
	var nd nodeStub
	_ = getJSON(e.api+"/v1/node/"+e.nodeID, &nd)
	return nd.Status
}

// mockTask is the edge job's task unless a test says otherwise.
const mockTask = `
    task "app" {
      driver = "mock_driver"
      config {
        run_for = "1h"
      }
      resources {
        cpu    = 100
        memory = 64
      }
    }`

// edgeOptions vary the edge: the task of its job, and whether its client
// sees the host's mounts (see startAgentNetOnly).
type edgeOptions struct {
	task    string
	netOnly bool
	// clientArgs are more flags for the client agent (-config).
	clientArgs []string
}

// startEdge starts the server with the short TTLs fast heal is measured
// with (docs/benchmarks.md), the client in a namespace, and the job.
func startEdge(t *testing.T) *edge {
	return startEdgeWith(t, edgeOptions{task: mockTask})
}

func startEdgeWith(t *testing.T, opts edgeOptions) *edge {
	n := newNetns(t)
	dir := t.TempDir()
	serverCfg := filepath.Join(dir, "server.hcl")
	must.NoError(t, os.WriteFile(serverCfg, []byte(`
ports {
  http = 24646
  rpc  = 24647
}
server {
  min_heartbeat_ttl = "2s"
  heartbeat_grace   = "1s"
}
`), 0o644))
	startAgent(t, "", "-dev", "-bind", n.hostIP, "-config", serverCfg, "-data-dir", filepath.Join(dir, "server"))
	e := &edge{n: n, api: fmt.Sprintf("http://%s:24646", n.hostIP)}
	pollUntil(t, 30*time.Second, "server up", func() (bool, string) {
		var nodes []nodeStub
		err := getJSON(e.api+"/v1/nodes", &nodes)
		return err == nil, fmt.Sprint(err)
	})

	start := startAgent
	if opts.netOnly {
		start = startAgentNetOnly
	}
	start(t, n.name, append([]string{"-client", "-servers", n.hostIP + ":24647", "-bind", n.nsIP,
		"-node", "edge-ns", "-data-dir", filepath.Join(dir, "client")}, opts.clientArgs...)...)
	pollUntil(t, 30*time.Second, "edge node ready", func() (bool, string) {
		var nodes []nodeStub
		if err := getJSON(e.api+"/v1/nodes", &nodes); err != nil {
			return false, err.Error()
		}
		for _, nd := range nodes {
			if nd.Name == "edge-ns" && nd.Status == "ready" {
				e.nodeID = nd.ID
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", nodes)
	})

	job := filepath.Join(dir, "edge.nomad.hcl")
	must.NoError(t, os.WriteFile(job, []byte(`
job "edge" {
  datacenters = ["dc1"]
  constraint {
    attribute = "${node.unique.name}"
    value     = "edge-ns"
  }
  group "app" {
    max_client_disconnect = "1h"
`+opts.task+`
  }
}
`), 0o644))
	out, err := exec.Command(nomadBin, "job", "run", "-address", e.api, job).CombinedOutput()
	must.NoError(t, err, must.Sprint(string(out)))
	pollUntil(t, 30*time.Second, "allocation running on the edge node", func() (bool, string) {
		list := e.allocs()
		if len(list) == 1 && list[0].ClientStatus == "running" && list[0].NodeID == e.nodeID {
			e.alloc = list[0]
			return true, ""
		}
		return false, fmt.Sprintf("%+v", list)
	})
	return e
}

// cutter takes the edge's link away and gives it back.
type cutter struct {
	name      string
	cut, heal func(t *testing.T, n *netns)
}

// linkDown takes the host side of the veth down: the client's packets go
// nowhere, as when a modem loses its carrier.
var linkDown = cutter{
	name: "link down",
	cut:  func(t *testing.T, n *netns) { sh(t, "ip", "link", "set", n.hostIf, "down") },
	heal: func(t *testing.T, n *netns) { sh(t, "ip", "link", "set", n.hostIf, "up") },
}

// dropRules are the iptables rules that make the link silently lose every
// packet both ways while it stays up: a blackhole, as a congested or
// misrouted cell does. INPUT only, on both ends: dropping in OUTPUT would
// tell the sender (EPERM), which a real network never does.
func dropRules(n *netns) [][]string {
	return [][]string{
		{"iptables", "INPUT", "-i", n.hostIf, "-j", "DROP"},
		{"ip", "netns", "exec", n.name, "iptables", "INPUT", "-j", "DROP"},
	}
}

// iptablesArgv puts op (-I, -D) after the iptables of rule.
func iptablesArgv(rule []string, op string) []string {
	var argv []string
	for _, a := range rule {
		argv = append(argv, a)
		if a == "iptables" {
			argv = append(argv, op)
		}
	}
	return argv
}

var packetDrop = cutter{
	name: "iptables DROP",
	cut: func(t *testing.T, n *netns) {
		for _, r := range dropRules(n) {
			sh(t, iptablesArgv(r, "-I")...)
		}
		t.Cleanup(func() { // rules a failed test left behind
			for _, r := range dropRules(n) {
				argv := iptablesArgv(r, "-D")
				_ = exec.Command(argv[0], argv[1:]...).Run()
			}
		})
	},
	heal: func(t *testing.T, n *netns) {
		for _, r := range dropRules(n) {
			sh(t, iptablesArgv(r, "-D")...)
		}
	},
}

// envInt reads a positive integer setting, or def.
func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var n int
	if _, err := fmt.Sscan(v, &n); err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// healTimes is how long after the link worked again the servers saw the
// node ready and the allocation running.
type healTimes struct{ ready, running time.Duration }

// cutAndHeal cuts the link, waits until the servers have given the node
// up (disconnected, allocation unknown) and the cut has lasted cutFor,
// heals it, and measures, polling the HTTP API every 25ms.
func (e *edge) cutAndHeal(t *testing.T, c cutter, cutFor time.Duration) healTimes {
	t.Helper()
	c.cut(t, e.n)
	cutAt := time.Now()
	pollUntil(t, 30*time.Second, "node disconnected, allocation unknown", func() (bool, string) {
		st, list := e.nodeStatus(), e.allocs()
		return st == "disconnected" && len(list) == 1 && list[0].ClientStatus == "unknown" && list[0].DesiredStatus == "run",
			fmt.Sprintf("node %s; %+v", st, list)
	})
	time.Sleep(time.Until(cutAt.Add(cutFor))) // the outage itself, not a wait for logic

	c.heal(t, e.n)
	healed := time.Now()
	var got healTimes
	deadline := healed.Add(60 * time.Second)
	var seen string
	for time.Now().Before(deadline) {
		st, list := e.nodeStatus(), e.allocs()
		now := time.Since(healed)
		if got.ready == 0 && st == "ready" {
			got.ready = now
		}
		if got.running == 0 && len(list) == 1 && list[0].ClientStatus == "running" {
			got.running = now
		}
		if got.ready > 0 && got.running > 0 {
			return got
		}
		seen = fmt.Sprintf("node %s; %+v", st, list)
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatalf("%s: node ready and allocation running not within 60s of the heal; last saw: %s", c.name, seen)
	return got
}

// stats returns min, median and max.
func stats(ds []time.Duration) (lo, med, hi time.Duration) {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[0], s[len(s)/2], s[len(s)-1]
}

// Fast heal on a real network ("Heal latency" in
// docs/concepts/disconnected-clients.md): a client in its own namespace
// runs a task of a group with a disconnect window; its link is cut long
// enough for the servers to mark the node disconnected and the allocation
// unknown (not lost), then healed. Every time, the same allocation is
// running again without its task having restarted, and the node ready,
// within 3s of the link working again and 1.5s in the median.
//
// NOMAD_E2E_HEAL_RUNS sets the number of cuts (default 2; the figures in
// docs/benchmarks.md are from 10), NOMAD_E2E_CUT_SECONDS their length
// (default 12).
func testHeal(t *testing.T, c cutter) {
	e := startEdge(t)
	runs := envInt(t, "NOMAD_E2E_HEAL_RUNS", 2)
	cutFor := time.Duration(envInt(t, "NOMAD_E2E_CUT_SECONDS", 12)) * time.Second
	var ready, running []time.Duration
	for i := range runs {
		got := e.cutAndHeal(t, c, cutFor)
		t.Logf("%s run %d: heal → node ready %v, → allocation running %v", c.name, i+1, got.ready, got.running)
		ready, running = append(ready, got.ready), append(running, got.running)
	}
	final := e.allocs()
	must.SliceLen(t, 1, final)
	must.Eq(t, e.alloc.ID, final[0].ID)
	must.Eq(t, uint64(0), final[0].TaskStates["app"].Restarts, must.Sprint("the task was not restarted"))
	must.Eq(t, e.alloc.TaskStates["app"].StartedAt, final[0].TaskStates["app"].StartedAt)

	for _, m := range []struct {
		what string
		ds   []time.Duration
	}{{"node ready", ready}, {"allocation running", running}} {
		lo, med, hi := stats(m.ds)
		t.Logf("%s, %d runs of %v: heal → %s min %v median %v max %v", c.name, runs, cutFor, m.what,
			lo.Round(time.Millisecond), med.Round(time.Millisecond), hi.Round(time.Millisecond))
		must.LessEq(t, 1500*time.Millisecond, med, must.Sprintf("median heal → %s", m.what))
		must.LessEq(t, 3*time.Second, hi, must.Sprintf("slowest heal → %s", m.what))
	}
}

func TestPartition_HealLatency_LinkDown(t *testing.T) { testHeal(t, linkDown) }

func TestPartition_HealLatency_PacketDrop(t *testing.T) {
	if os.Geteuid() == 0 {
		if _, err := exec.LookPath("iptables"); err != nil {
			t.Skip("the packet-drop partition needs iptables (apt-get install iptables)")
		}
	}
	testHeal(t, packetDrop)
}

// execTask is an exec task that runs until stopped.
const execTask = `
    task "app" {
      driver = "exec"
      config {
        command = "/bin/sleep"
        args    = ["3600"]
      }
      resources {
        cpu    = 100
        memory = 32
      }
    }`

// pidsWithAllocID finds the processes whose environment carries the
// allocation's ID: the client gives every task NOMAD_ALLOC_ID.
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

// An isolated exec task of a group with a disconnect window runs on through
// a real partition: after the heal the same allocation is running, its task
// never restarted, and it is the same process.
func TestPartition_ExecTaskResumes(t *testing.T) {
	if os.Geteuid() == 0 {
		if _, err := exec.LookPath("nsenter"); err != nil {
			t.Skip("the exec partition test needs util-linux's nsenter")
		}
		_, v2 := os.Stat("/sys/fs/cgroup/cgroup.controllers")
		_, v1 := os.Stat("/sys/fs/cgroup/memory/cgroup.procs")
		if v1 != nil && v2 != nil {
			t.Skip("the exec driver needs cgroups mounted at /sys/fs/cgroup")
		}
	}
	var allocID string
	t.Cleanup(func() { killAllocTasks(allocID) }) // after the agents have stopped
	e := startEdgeWith(t, edgeOptions{task: execTask, netOnly: true})
	allocID = e.alloc.ID
	pids := pidsWithAllocID(e.alloc.ID)
	must.SliceLen(t, 1, pids, must.Sprint("the exec task is one real process"))

	got := e.cutAndHeal(t, linkDown, 12*time.Second)
	t.Logf("heal → node ready %v, → allocation running %v", got.ready, got.running)

	final := e.allocs()
	must.SliceLen(t, 1, final)
	must.Eq(t, e.alloc.ID, final[0].ID)
	must.Eq(t, uint64(0), final[0].TaskStates["app"].Restarts, must.Sprint("the task was not restarted"))
	must.Eq(t, e.alloc.TaskStates["app"].StartedAt, final[0].TaskStates["app"].StartedAt)
	must.Eq(t, pids, pidsWithAllocID(e.alloc.ID), must.Sprint("the same process"))
}

// killAllocTasks kills what an allocation's exec tasks left running and
// removes their cgroups. An agent that stops (not -dev) leaves its tasks
// running for the next one to re-attach to; a test must not leave them
// behind on the machine.
func killAllocTasks(allocID string) {
	if allocID == "" {
		return
	}
	for _, pid := range pidsWithAllocID(allocID) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	dirs, _ := filepath.Glob("/sys/fs/cgroup/*/nomad/" + allocID + ".*")
	v2, _ := filepath.Glob("/sys/fs/cgroup/nomad.slice/" + allocID + ".*")
	for _, d := range append(dirs, v2...) {
		// The kernel empties a cgroup a moment after its last process
		// was killed; until then rmdir says EBUSY.
		for deadline := time.Now().Add(5 * time.Second); os.Remove(d) != nil && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
		}
	}
}
