package partition

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"golang.org/x/sys/unix"

	"github.com/nomad-edge/nomad/client/allocnet"
	"github.com/nomad-edge/nomad/client/allocnet/allocnettest"
	"github.com/nomad-edge/nomad/e2e/internal/harness"
	"github.com/nomad-edge/nomad/helper/netns"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// bridgeEdge is the edge whose client runs bridge-mode allocations, on a
// bridge and subnet of the test's own, inside the client's namespace on
// the fabric: the bridge, the veths' host ends and the plugins' rules are
// there (env lists them there), the allocations' namespaces are pinned
// under the host's /run/netns (the client enters the namespace's network
// only, so that its pins outlive it), and the host reaches the mapped
// ports at the client's fabric address.
type bridgeEdge struct {
	*edge
	env *allocnettest.Env
	// ip is the client's address, where the ports are mapped.
	ip string
	// addrs are the allocations' addresses on the bridge, by ID.
	addrs map[string]string
}

func newBridgeEdge(t *testing.T, fault harness.Fault) *bridgeEdge {
	t.Helper()
	env := allocnettest.New(t) // skips where bridge mode cannot run
	e := newEdge(t, edgeOptions{fault: fault, netOnly: true, clientConfig: fmt.Sprintf(`
client {
  network_interface     = "eth0"
  bridge_network_name   = %q
  bridge_network_subnet = %q
}
plugin "raw_exec" {
  config {
    enabled = true
  }
}
`, env.Config.Bridge.Name, env.Config.Bridge.Subnet)})
	m := e.fab.Member("client")
	env.Netns = m.NS
	env.Config.NetnsDir = allocnet.DefaultNetnsDir
	env.Config.StateDir = filepath.Join(e.client.DataDir, "client", "allocnet")
	return &bridgeEdge{edge: e, env: env, ip: m.IP, addrs: map[string]string{}}
}

// bridgeJob is a job of one group in bridge mode, pinned to the edge
// node, whose raw_exec task serves its allocation ID on port 8080 of its
// namespace, mapped from the host port of "http". %s: the group's
// disconnect block.
const bridgeJob = `
job %q {
  datacenters = ["dc1"]
  constraint {
    attribute = "${node.unique.name}"
    value     = "edge-ns"
  }
  group "app" {
%s
    restart {
      attempts = 3
      interval = "5m"
      delay    = "1s"
      mode     = "fail"
    }
    network {
      mode = "bridge"
      port "http" {
        to = 8080
      }
    }
    task "web" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo $NOMAD_ALLOC_ID > $NOMAD_TASK_DIR/id; exec busybox httpd -f -p 8080 -h $NOMAD_TASK_DIR"]
      }
      resources {
        cpu    = 100
        memory = 32
      }
    }
  }
}
`

// runBridgeJob registers the job and returns its allocation and the host
// port once it runs and answers there from the host; the test's cleanup
// kills its task and unpins its namespace.
func (b *bridgeEdge) runBridgeJob(t *testing.T, name, disconnect string) (allocID string, port int) {
	t.Helper()
	path := filepath.Join(b.agents.Dir, name+".nomad.hcl")
	must.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(bridgeJob, name, disconnect)), 0o644))
	out, code := b.server.Nomad("job", "run", "-detach", path)
	must.Eq(t, 0, code, must.Sprint(out))
	wait.Poll(t, 30*time.Second, name+"'s allocation running", func() (bool, string) {
		var list []allocStub
		if err := b.server.GetJSON("/v1/job/"+name+"/allocations", &list); err != nil {
			return false, err.Error()
		}
		ok := len(list) == 1 && list[0].ClientStatus == "running"
		if ok {
			allocID = list[0].ID
		}
		return ok, fmt.Sprintf("%+v", list)
	})
	return allocID, b.track(t, allocID)
}

// track has the test's cleanup kill the running allocation's task and
// unpin its namespace, and returns its host port once the task answers
// there from the host.
func (b *bridgeEdge) track(t *testing.T, allocID string) (port int) {
	t.Helper()
	b.agents.KillAtEnd(harness.AllocMark(allocID))
	t.Cleanup(func() { _ = netns.Remove(filepath.Join(allocnet.DefaultNetnsDir, allocID)) })
	var a struct {
		AllocatedResources struct {
			Shared struct {
				Ports []struct {
					Label     string
					Value, To int
				}
			}
		}
	}
	must.NoError(t, b.server.GetJSON("/v1/allocation/"+allocID, &a))
	ports := a.AllocatedResources.Shared.Ports
	must.Len(t, 1, ports, must.Sprintf("%+v", a))
	must.Eq(t, 8080, ports[0].To)
	b.waitAnswer(t, "", allocID, ports[0].Value, "from the host")
	b.addrs[allocID] = b.address(t, allocID)
	return ports[0].Value
}

// ask GETs /id of the client's port, from the namespace pinned at from
// ("": the test's own), and returns the body.
func (b *bridgeEdge) ask(from string, port int) (string, error) {
	conn, err := netns.DialTCP(from, net.JoinHostPort(b.ip, strconv.Itoa(port)), 3*time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := io.WriteString(conn, "GET /id HTTP/1.0\r\n\r\n"); err != nil {
		return "", err
	}
	resp, err := io.ReadAll(conn)
	if err != nil {
		return "", err
	}
	_, body, _ := strings.Cut(string(resp), "\r\n\r\n")
	return body, nil
}

// waitAnswer waits for allocID's task to answer on port, asked from the
// namespace at from.
func (b *bridgeEdge) waitAnswer(t *testing.T, from, allocID string, port int, what string) {
	t.Helper()
	wait.Poll(t, 20*time.Second, fmt.Sprintf("allocation %s answering on host port %d %s", allocID[:8], port, what), func() (bool, string) {
		body, err := b.ask(from, port)
		return err == nil && body == allocID+"\n", fmt.Sprintf("%q %v", body, err)
	})
}

// clientNS is the client's namespace, as ask takes it: the edge node's own
// network, which keeps reaching its allocations while cut off.
func (b *bridgeEdge) clientNS() string { return "/run/netns/" + b.fab.Member("client").NS }

// allocNet is what the host holds of one allocation's network. Two equal
// ones mean nothing of it was made again, removed or rewritten: a CNI ADD
// makes a new namespace and a veth of a new random name, and rewrites
// libcni's cached result and the record.
type allocNet struct {
	// Netns is the inode of the pinned namespace; 0: none.
	Netns uint64
	// Leftovers are the namespace, the record and the iptables rules
	// naming the allocation (allocnettest.Env.Leftovers).
	Leftovers []string
	// AddrRules are the rules naming its address and not it: the
	// firewall plugin's, in CNI-FORWARD.
	AddrRules []string
	// Files are the client's files naming the allocation (its record,
	// libcni's cache), with their size and modification time.
	Files []string
}

func (b *bridgeEdge) allocNet(t *testing.T, allocID string) allocNet {
	t.Helper()
	st := allocNet{Leftovers: b.env.Leftovers(t, allocID), AddrRules: b.addrRules(t, allocID)}
	var s syscall.Stat_t
	if syscall.Stat(filepath.Join(allocnet.DefaultNetnsDir, allocID), &s) == nil {
		st.Netns = s.Ino
	}
	_ = filepath.WalkDir(b.env.Config.StateDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.Contains(d.Name(), allocID) {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			st.Files = append(st.Files, fmt.Sprintf("%s %d %s", path, fi.Size(), fi.ModTime().Format(time.RFC3339Nano)))
		}
		return nil
	})
	return st
}

// address is the allocation's address on the bridge, from its record.
func (b *bridgeEdge) address(t *testing.T, allocID string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(b.env.Config.StateDir, "allocs", allocID+".json"))
	must.NoError(t, err)
	var rec struct{ Status struct{ Address string } }
	must.NoError(t, json.Unmarshal(raw, &rec))
	must.NotEq(t, "", rec.Status.Address)
	return rec.Status.Address
}

// addrRE matches the address addr, not a longer one it begins.
func addrRE(addr string) *regexp.Regexp {
	return regexp.MustCompile(`\b` + regexp.QuoteMeta(addr) + `\b`)
}

// netnsNames lists the host's named namespaces (`ip netns list`).
func netnsNames(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("ip", "netns", "list").CombinedOutput()
	must.NoError(t, err, must.Sprint(string(out)))
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if name, _, _ := strings.Cut(strings.TrimSpace(line), " "); name != "" {
			names = append(names, name)
		}
	}
	return names
}

// waitGone waits until nothing of the allocations' networks is left:
// namespace, record, rules naming the allocation or its address (the
// firewall plugin's rules in CNI-FORWARD name only the address), and a
// veth on the bridge beyond keep of them.
func (b *bridgeEdge) waitGone(t *testing.T, what string, keep int, allocIDs ...string) {
	t.Helper()
	wait.Poll(t, 30*time.Second, what, func() (bool, string) {
		var left []string
		for _, id := range allocIDs {
			left = append(left, b.env.Leftovers(t, id)...)
			left = append(left, b.addrRules(t, id)...)
			if slices.Contains(netnsNames(t), id) {
				left = append(left, "ip netns list: "+id)
			}
		}
		ports := b.env.BridgePorts(t)
		return len(left) == 0 && len(ports) == keep, fmt.Sprintf("left %q; bridge ports %q", left, ports)
	})
}

// waitDisconnected waits until the servers have given the node up and
// marked every allocation of jobs unknown.
func (b *bridgeEdge) waitDisconnected(t *testing.T, jobs ...string) {
	t.Helper()
	b.waitJobs(t, "node disconnected, allocations unknown", "disconnected", "unknown", jobs...)
}

// waitReconnected waits until the node is ready and every allocation of
// jobs runs again, as the servers see them.
func (b *bridgeEdge) waitReconnected(t *testing.T, jobs ...string) {
	t.Helper()
	b.waitJobs(t, "node ready, allocations running", "ready", "running", jobs...)
}

func (b *bridgeEdge) waitJobs(t *testing.T, what, node, client string, jobs ...string) {
	t.Helper()
	wait.Poll(t, 60*time.Second, what, func() (bool, string) {
		st := b.nodeStatus()
		seen := []string{"node " + st}
		ok := st == node
		for _, job := range jobs {
			var list []allocStub
			_ = b.server.GetJSON("/v1/job/"+job+"/allocations", &list)
			ok = ok && len(list) == 1 && list[0].ClientStatus == client && list[0].DesiredStatus == "run"
			seen = append(seen, fmt.Sprintf("%s %+v", job, list))
		}
		return ok, strings.Join(seen, "; ")
	})
}

// taskState is the web task's restarts and start, as the servers see it.
func (b *bridgeEdge) taskState(t *testing.T, allocID string) string {
	t.Helper()
	var a allocStub
	must.NoError(t, b.server.GetJSON("/v1/allocation/"+allocID, &a))
	ts := a.TaskStates["web"]
	return fmt.Sprintf("restarts %d, started %s", ts.Restarts, ts.StartedAt.Format(time.RFC3339Nano))
}

// holdUnchanged watches for a while that nothing of the allocation's
// network changes (want) and that its task keeps its processes: whatever a
// reconnect triggers on the client happens within it.
func (b *bridgeEdge) holdUnchanged(t *testing.T, allocID string, want allocNet, rules string, pids []int) {
	t.Helper()
	harness.Hold(t, 3*time.Second, "the allocation's network and task untouched", func() error {
		if got := b.allocNet(t, allocID); !equalNet(got, want) {
			return fmt.Errorf("network now %+v, was %+v", got, want)
		}
		if rules != "" {
			if got := b.env.Rules(t); got != rules {
				return fmt.Errorf("the client's iptables rules changed:\n%s\nwere:\n%s", got, rules)
			}
		}
		if got := harness.AllocPIDs(allocID); !slices.Equal(got, pids) {
			return fmt.Errorf("task processes now %v, were %v", got, pids)
		}
		return nil
	})
}

func equalNet(a, b allocNet) bool {
	return a.Netns == b.Netns && slices.Equal(a.Leftovers, b.Leftovers) && slices.Equal(a.AddrRules, b.AddrRules) &&
		slices.Equal(a.Files, b.Files)
}

// addrRules are the client's iptables rules that name the allocation's
// address on the bridge and not the allocation.
func (b *bridgeEdge) addrRules(t *testing.T, allocID string) []string {
	t.Helper()
	addr, ok := b.addrs[allocID]
	if !ok {
		return nil
	}
	at := addrRE(addr)
	var out []string
	for _, r := range strings.Split(b.env.Rules(t), "\n") {
		if at.MatchString(r) && !strings.Contains(r, allocID) {
			out = append(out, r)
		}
	}
	return out
}

// A bridge-mode allocation of a group with a disconnect window runs on
// through a real partition: while the client is cut off its task keeps
// answering on its mapped host port from the edge node itself, and the
// reconnect changes nothing on the host: the same namespace, the same
// veth, the same iptables rules (the client's whole ruleset), no CNI ADD
// (libcni's cache and the record unwritten), the task not restarted.
// Stopped, it leaves nothing.
func TestPartition_BridgeNetworkSurvivesDisconnect(t *testing.T) {
	b := newBridgeEdge(t, harness.LinkDown)
	id, port := b.runBridgeJob(t, "edge", `    disconnect {
      lost_after = "1h"
    }`)
	before, veths, rules := b.allocNet(t, id), b.env.BridgePorts(t), b.env.Rules(t)
	must.Len(t, 1, veths)
	must.NotEq(t, uint64(0), before.Netns)
	must.SliceNotEmpty(t, before.Files, must.Sprint("no file of the client names the allocation: ", b.env.Config.StateDir))
	t.Logf("the allocation's network: %+v; veths %q", before, veths)
	pids, task := harness.AllocPIDs(id), b.taskState(t, id)
	must.Len(t, 1, pids)

	heal := b.fab.Apply("client", harness.LinkDown)
	b.waitDisconnected(t, "edge")
	b.waitAnswer(t, b.clientNS(), id, port, "from the edge node while it is cut off")
	must.Eq(t, before, b.allocNet(t, id))

	heal()
	b.waitReconnected(t, "edge")
	b.holdUnchanged(t, id, before, rules, pids)
	must.Eq(t, veths, b.env.BridgePorts(t), must.Sprint("the same veth"))
	must.Eq(t, task, b.taskState(t, id), must.Sprint("the task was not restarted"))
	b.waitAnswer(t, "", id, port, "from the host after the reconnect")

	out, code := b.server.Nomad("job", "stop", "edge")
	must.Eq(t, 0, code, must.Sprint(out))
	b.waitGone(t, "nothing of the stopped allocation's network left", 0, id)
}

// powerCycleNetwork is what a power cut takes of the client's network
// while its data dir stays: the kernel's state. The allocations'
// namespaces (no process is left in them: the tasks are dead) and with
// them their veths, the bridge, and every iptables rule of the client's
// namespace (a fabric cut by LinkDown has none of its own there). The
// first allocation's pin is left as an empty file, as on a device whose
// /run is on disk; the others' go, as from a tmpfs.
func (b *bridgeEdge) powerCycleNetwork(t *testing.T, allocIDs ...string) {
	t.Helper()
	for i, id := range allocIDs {
		pin := filepath.Join(allocnet.DefaultNetnsDir, id)
		if i == 0 {
			must.NoError(t, unix.Unmount(pin, unix.MNT_DETACH))
			continue
		}
		must.NoError(t, netns.Remove(pin))
	}
	run := func(args ...string) {
		t.Helper()
		out, err := b.env.Command(args[0], args[1:]...).CombinedOutput()
		must.NoError(t, err, must.Sprintf("%v: %s", args, out))
	}
	run("ip", "link", "del", b.env.Config.Bridge.Name)
	for _, table := range []string{"nat", "filter"} {
		run("iptables", "-t", table, "-F")
		run("iptables", "-t", table, "-X")
	}
	wait.Poll(t, 10*time.Second, "the allocations' veths gone with their namespaces", func() (bool, string) {
		// Its stdout only: ip may say on stderr that a peer's namespace
		// is gone, which is the point.
		out, _ := b.env.Command("ip", "-o", "link", "show", "type", "veth").Output()
		links := strings.Split(strings.TrimSpace(string(out)), "\n")
		return len(links) == 1 && strings.Contains(links[0], " eth0@"), string(out)
	})
}

// Offline reboot of a client with bridge-mode allocations: cut off, it
// loses power (agent and tasks killed, and with them the kernel's network
// state: the namespaces, their veths, the bridge and every rule) and
// comes back still cut off. The allocation of the group with a disconnect
// window runs again within its restart delay with no server reachable, in
// a namespace at the same path, and answers on the same host port from
// the edge node: the same rules as before (at its new address on the
// bridge), once each. The reconnect then changes nothing on the host, and
// its task is not restarted again. The allocation of the group without a
// window waits for the servers, which replace it on the heal: nothing of
// the original's network is left, and the replacement answers.
func TestPartition_BridgeNetworkOfflineReboot(t *testing.T) {
	b := newBridgeEdge(t, harness.LinkDown)
	id, port := b.runBridgeJob(t, "edge", `    disconnect {
      lost_after = "10m"
    }`)
	nowin, _ := b.runBridgeJob(t, "nowin", "")
	before := b.allocNet(t, id)
	must.SliceNotEmpty(t, before.AddrRules, must.Sprint("no firewall rule names the allocation's address: ", b.env.Rules(t)))

	heal := b.fab.Apply("client", harness.LinkDown)
	b.client.Kill9()
	for _, a := range []string{id, nowin} {
		for _, pid := range harness.AllocPIDs(a) {
			must.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
		}
	}
	wait.Poll(t, 10*time.Second, "the tasks dead", func() (bool, string) {
		a, w := harness.AllocPIDs(id), harness.AllocPIDs(nowin)
		return len(a)+len(w) == 0, fmt.Sprint(a, w)
	})
	b.powerCycleNetwork(t, id, nowin)
	must.Eq(t, []string{"netns " + id, "record " + id}, b.env.Leftovers(t, id), must.Sprint("only the record and the pin's empty file are left"))
	must.False(t, netns.Exists(filepath.Join(allocnet.DefaultNetnsDir, id)))

	b.client.Start()
	wait.Poll(t, 30*time.Second, "the windowed task running again with no server reachable", func() (bool, string) {
		pids := harness.AllocPIDs(id)
		return len(pids) == 1, fmt.Sprint(pids)
	})
	b.waitAnswer(t, b.clientNS(), id, port, "from the edge node after the offline reboot")
	stayGone(t, nowin, 2*time.Second, "a group without a window waits for the servers")
	oldAddr, newAddr := b.addrs[id], b.address(t, id)
	b.addrs[id] = newAddr
	after, pids := b.allocNet(t, id), harness.AllocPIDs(id)
	must.NotEq(t, uint64(0), after.Netns)
	mapped := func(rules []string) []string {
		out := slices.Clone(rules)
		for i := range out {
			out[i] = addrRE(oldAddr).ReplaceAllString(out[i], newAddr)
		}
		return out
	}
	must.Eq(t, mapped(before.Leftovers), after.Leftovers,
		must.Sprintf("the rules as before the reboot, at the new address %s (was %s)", newAddr, oldAddr))
	must.Eq(t, mapped(before.AddrRules), after.AddrRules)

	b.waitDisconnected(t, "edge")
	heal()
	b.waitReconnected(t, "edge")
	// The servers hear of the offline restart once reconnected.
	var task string
	wait.Poll(t, 15*time.Second, "the servers told of the offline restart", func() (bool, string) {
		task = b.taskState(t, id)
		return strings.HasPrefix(task, "restarts 1,"), task
	})
	var replacement string
	wait.Poll(t, 60*time.Second, "the window-less allocation replaced", func() (bool, string) {
		var list []allocStub
		_ = b.server.GetJSON("/v1/job/nowin/allocations", &list)
		replacement = ""
		for _, a := range list {
			if a.ID != nowin && a.ClientStatus == "running" {
				replacement = a.ID
			}
		}
		return replacement != "", fmt.Sprintf("%+v", list)
	})
	b.track(t, replacement)
	b.waitGone(t, "nothing of the replaced allocation's network left", 2, nowin)
	b.holdUnchanged(t, id, after, "", pids)
	must.Eq(t, task, b.taskState(t, id), must.Sprint("the task was not restarted by the reconnect"))
	b.waitAnswer(t, "", id, port, "from the host after the reconnect")

	for _, job := range []string{"edge", "nowin"} {
		out, code := b.server.Nomad("job", "stop", job)
		must.Eq(t, 0, code, must.Sprint(out))
	}
	b.waitGone(t, "nothing of the stopped allocations' networks left", 0, id, nowin, replacement)
}

// kill -9 of a client agent running two bridge-mode allocations, one of
// which the operator stops while the agent is down: the next agent
// re-adopts the running one without touching it (the same namespace,
// veth, rules and files, the same task process), and cleans up the
// stopped one: no namespace in `ip netns list`, no veth on the bridge, no
// rule naming it. Before the kill, each task answers on its mapped host
// port from the host and from the other allocation's namespace.
func TestPartition_BridgeNetworkAgentKilled(t *testing.T) {
	b := newBridgeEdge(t, harness.LinkDown)
	window := `    disconnect {
      lost_after = "1h"
    }`
	keep, keepPort := b.runBridgeJob(t, "keep", window)
	gone, gonePort := b.runBridgeJob(t, "gone", window)
	keepNS, goneNS := filepath.Join(allocnet.DefaultNetnsDir, keep), filepath.Join(allocnet.DefaultNetnsDir, gone)
	b.waitAnswer(t, goneNS, keep, keepPort, "from the other allocation")
	b.waitAnswer(t, keepNS, gone, gonePort, "from the other allocation")
	before, veths := b.allocNet(t, keep), b.env.BridgePorts(t)
	must.Len(t, 2, veths)
	pids, task := harness.AllocPIDs(keep), b.taskState(t, keep)
	must.Len(t, 1, pids)

	b.client.Kill9()
	out, code := b.server.Nomad("job", "stop", "-detach", "gone")
	must.Eq(t, 0, code, must.Sprint(out))
	must.SliceNotEmpty(t, b.env.Leftovers(t, gone), must.Sprint("the stopped allocation's network is still there while no agent runs"))

	b.client.Start()
	b.waitGone(t, "the network of the allocation stopped while the agent was down cleaned up", 1, gone)
	wait.Poll(t, 15*time.Second, "the stopped allocation's task gone", func() (bool, string) {
		left := harness.AllocPIDs(gone)
		return len(left) == 0, fmt.Sprint(left)
	})
	b.waitReconnected(t, "keep")
	b.holdUnchanged(t, keep, before, "", pids)
	ports := b.env.BridgePorts(t)
	must.Len(t, 1, ports)
	must.SliceContains(t, veths, ports[0], must.Sprint("the running allocation's veth, not a new one"))
	must.Eq(t, task, b.taskState(t, keep), must.Sprint("the task was not restarted"))
	b.waitAnswer(t, "", keep, keepPort, "from the host after the restart")
	_, err := b.ask("", gonePort)
	must.Error(t, err, must.Sprint("the stopped allocation's host port still answers"))

	out, code = b.server.Nomad("job", "stop", "keep")
	must.Eq(t, 0, code, must.Sprint(out))
	b.waitGone(t, "nothing of either allocation's network left", 0, keep, gone)
}
