package upstream

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/e2e/internal/harness"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// upgradeJobs are the jobs of the upgrade test: each runs one allocation
// on each of the two clients.
var upgradeJobs = []string{"web", "cache"}

// windowJob is a raw_exec service job of two allocations, one per node
// (distinct_hosts), each one task that says "started" and sleeps, and
// which may stay disconnected for two minutes. The window is written
// max_client_disconnect, the only way upstream 1.6.5 knows (`disconnect`
// came in 1.8): the job is registered with upstream's servers, and ours
// must honour the field as it comes out of upstream's snapshot.
func windowJob(id string) *nomadapi.Job {
	job := sleepJob(id)
	tg := job.TaskGroups[0]
	two := 2
	tg.Count = &two
	window := 2 * time.Minute
	tg.Disconnect = nil
	//lint:ignore SA1019 the only window upstream 1.6.5 knows
	tg.MaxClientDisconnect = &window
	job.Constrain(nomadapi.NewConstraint("", "distinct_hosts", "true"))
	// The deployment is over a second after both tasks run, so the
	// snapshot is taken of a settled cluster.
	healthy := time.Second
	job.Update = &nomadapi.UpdateStrategy{MinHealthyTime: &healthy}
	return job
}

// upstreamServerConfig is upstream server i's config, one of three
// joined by serf.
func upstreamServerConfig(i int, p harness.Ports, join []string) string {
	return agentHead(harness.DataDirVar, fmt.Sprintf("upstream-server-%d", i), p, true) + fmt.Sprintf(`server {
  enabled          = true
  bootstrap_expect = 3
  server_join {
    retry_join     = [%s]
    retry_interval = "1s"
  }
}
`, strings.Join(join, ", "))
}

// ourServerConfig is our server i's config, one of three joined by serf,
// with short heartbeat TTLs and grace: a client away shows in seconds.
func ourServerConfig(i int, p harness.Ports, join []string) string {
	return agentHead(harness.DataDirVar, fmt.Sprintf("server-%d", i), p, false) + fmt.Sprintf(`log_level = "INFO"
server {
  enabled           = true
  bootstrap_expect  = 3
  heartbeat_grace   = "2s"
  min_heartbeat_ttl = "2s"
  server_join {
    retry_join     = [%s]
    retry_interval = "1s"
  }
}
`, strings.Join(join, ", "))
}

// upstreamClientConfig is an upstream client's config, servers its
// client.servers.
func upstreamClientConfig(name, dataDir string, p harness.Ports, servers []string) string {
	return agentHead(dataDir, name, p, true) + clientBlock(servers)
}

// ourClientConfig is our client agent's config on an upstream client's
// data_dir, under the same node name.
func ourClientConfig(name, dataDir string, p harness.Ports, servers []string) string {
	return agentHead(dataDir, name, p, false) + clientBlock(servers)
}

// clientBlock is a client with raw_exec whose client.servers are servers
// (quoted addresses).
func clientBlock(servers []string) string {
	return fmt.Sprintf("client {\n  enabled = true\n  servers = [%s]\n}\n", strings.Join(servers, ", ")) + rawExecPlugin
}

// serfAddrs are the serf listeners of ports but skip's, quoted for HCL.
func serfAddrs(ports []harness.Ports, skip int) []string {
	var out []string
	for i, p := range ports {
		if i != skip {
			out = append(out, strconv.Quote(fmt.Sprintf("127.0.0.1:%d", p.Serf)))
		}
	}
	return out
}

// rpcAddrs are the agents' RPC listeners, quoted for HCL.
func rpcAddrs(agents []*harness.Agent) []string {
	var out []string
	for _, a := range agents {
		out = append(out, strconv.Quote(a.RPCAddr()))
	}
	return out
}

// upgrade is the state of the upgrade test: the agents, and what the
// workload was before anything was upgraded.
type upgrade struct {
	t *testing.T
	// api is what the test asks: upstream's servers, then ours.
	api     func() *nomadapi.Client
	servers []*harness.Agent // whoever's servers run now
	// allocs are the original allocations by ID: job, node, task PID.
	allocs map[string]origAlloc
	nodes  map[string]string // node ID by node name
}

type origAlloc struct {
	job, nodeID, nodeName string
	pid                   int
}

func (u *upgrade) mustNotHaveDied() {
	for _, s := range u.servers {
		s.MustNotHaveDied()
	}
}

// waitLeader waits until every server names the same leader.
func waitLeader(t *testing.T, servers []*harness.Agent, who string) {
	t.Helper()
	wait.Poll(t, 60*time.Second, "every one of "+who+" servers agrees on one leader", func() (bool, string) {
		views := map[string]string{}
		agreed := ""
		for _, s := range servers {
			s.MustNotHaveDied()
			l := s.Leader()
			views[s.Name] = l
			if l == "" || (agreed != "" && l != agreed) {
				return false, fmt.Sprintf("leader views: %v", views)
			}
			agreed = l
		}
		return true, ""
	})
}

// nodeStatuses is every node's status by name, and a line saying so.
func (u *upgrade) nodeStatuses() (map[string]*nomadapi.NodeListStub, string, error) {
	nodes, _, err := u.api().Nodes().List(nil)
	if err != nil {
		return nil, "", err
	}
	out := map[string]*nomadapi.NodeListStub{}
	var seen []string
	for _, n := range nodes {
		out[n.Name] = n
		seen = append(seen, fmt.Sprintf("%s %s %s v%s", n.Name, n.ID[:8], n.Status, n.Version))
	}
	sort.Strings(seen)
	return out, strings.Join(seen, "; "), nil
}

// waitNodes waits until the nodes named have status, there being
// exactly the two original nodes with their IDs.
func (u *upgrade) waitNodes(status string, names ...string) {
	u.t.Helper()
	wait.Poll(u.t, 60*time.Second, fmt.Sprintf("nodes %v %s", names, status), func() (bool, string) {
		u.mustNotHaveDied()
		nodes, seen, err := u.nodeStatuses()
		if err != nil {
			return false, err.Error()
		}
		if len(nodes) != len(u.nodes) {
			return false, seen
		}
		for name, id := range u.nodes {
			if nodes[name] == nil || nodes[name].ID != id {
				return false, "not the original nodes: " + seen
			}
		}
		for _, name := range names {
			if nodes[name].Status != status {
				return false, seen
			}
		}
		return true, seen
	})
}

// allAllocs is every allocation of the test's jobs, by ID, as the servers
// have them.
func (u *upgrade) allAllocs() (map[string]*nomadapi.AllocationListStub, string, error) {
	out := map[string]*nomadapi.AllocationListStub{}
	var seen []string
	for _, job := range upgradeJobs {
		stubs, _, err := u.api().Jobs().Allocations(job, true, nil)
		if err != nil {
			return nil, "", err
		}
		for _, a := range stubs {
			out[a.ID] = a
			restarts := uint64(0)
			if ts := a.TaskStates["sleep"]; ts != nil {
				restarts = ts.Restarts
			}
			seen = append(seen, fmt.Sprintf("%s/%s on %s: %s/%s restarts %d", a.JobID, a.ID[:8], a.NodeName, a.ClientStatus, a.DesiredStatus, restarts))
		}
	}
	sort.Strings(seen)
	return out, strings.Join(seen, "; "), nil
}

// waitAllocs waits until the original allocations and no others exist,
// those on the nodes named having clientStatus and desired run, and,
// when running, their task running with no restart.
func (u *upgrade) waitAllocs(clientStatus string, nodeNames ...string) {
	u.t.Helper()
	wait.Poll(u.t, 60*time.Second, fmt.Sprintf("the original allocations on %v %s, and no other", nodeNames, clientStatus), func() (bool, string) {
		u.mustNotHaveDied()
		allocs, seen, err := u.allAllocs()
		if err != nil {
			return false, err.Error()
		}
		if err := u.onlyOriginals(allocs); err != nil {
			return false, err.Error() + ": " + seen
		}
		for id, o := range u.allocs {
			if !slices.Contains(nodeNames, o.nodeName) {
				continue
			}
			a := allocs[id]
			if a.ClientStatus != clientStatus || a.DesiredStatus != "run" {
				return false, seen
			}
			if clientStatus == "running" {
				if ts := a.TaskStates["sleep"]; ts == nil || ts.State != "running" || ts.Restarts != 0 {
					return false, seen
				}
			}
		}
		return true, seen
	})
}

// onlyOriginals says whether allocs are exactly the original allocations,
// each on its original node.
func (u *upgrade) onlyOriginals(allocs map[string]*nomadapi.AllocationListStub) error {
	for id, a := range allocs {
		o, ok := u.allocs[id]
		if !ok {
			return fmt.Errorf("allocation %s of %s on %s was placed, not an original", id[:8], a.JobID, a.NodeName)
		}
		if a.NodeID != o.nodeID {
			return fmt.Errorf("allocation %s on node %s, not its original %s", id[:8], a.NodeID[:8], o.nodeID[:8])
		}
	}
	for id := range u.allocs {
		if allocs[id] == nil {
			return fmt.Errorf("original allocation %s is gone", id[:8])
		}
	}
	return nil
}

// mustKeepPIDs checks that every original allocation's task is its one
// original process, alive.
func (u *upgrade) mustKeepPIDs(step string) {
	u.t.Helper()
	for id, o := range u.allocs {
		must.True(u.t, harness.Alive(o.pid), must.Sprintf("%s: %s's task process %d lives", step, id[:8], o.pid))
		must.Eq(u.t, []int{o.pid}, harness.AllocPIDs(id), must.Sprintf("%s: %s's only task process is its original one", step, id[:8]))
	}
}

// waitTakenOver waits until every original allocation on node name
// says, in its task's events, that our client took its task over.
func (u *upgrade) waitTakenOver(name string) {
	u.t.Helper()
	for id, o := range u.allocs {
		if o.nodeName != name {
			continue
		}
		wait.Poll(u.t, 30*time.Second, id[:8]+"'s task re-attached by our client, not restarted", func() (bool, string) {
			a, _, err := u.api().Allocations().Info(id, nil)
			if err != nil {
				return false, err.Error()
			}
			ts := a.TaskStates["sleep"]
			if ts == nil {
				return false, "no task state"
			}
			var msgs []string
			for _, e := range ts.Events {
				msgs = append(msgs, e.Type+": "+e.DisplayMessage)
			}
			ok := ts.State == "running" && ts.Restarts == 0 &&
				strings.Contains(strings.Join(msgs, "\n"), "taken over from an upstream Nomad client")
			return ok, fmt.Sprintf("state %s restarts %d events %q", ts.State, ts.Restarts, msgs)
		})
	}
}

// waitNodeIs waits until node name is ready, run by an upstream client
// (nomad.version 1.6.5, nomad.upstream = true) or by ours, and written
// since index after (its client registered since).
func (u *upgrade) waitNodeIs(name string, upstream bool, after uint64) {
	u.t.Helper()
	wait.Poll(u.t, 60*time.Second, fmt.Sprintf("node %s ready, upstream %v, written after index %d", name, upstream, after), func() (bool, string) {
		u.mustNotHaveDied()
		n, _, err := u.api().Nodes().Info(u.nodes[name], nil)
		if err != nil {
			return false, err.Error()
		}
		isUp := n.Attributes["nomad.upstream"] == "true" && n.Attributes["nomad.version"] == "1.6.5"
		return n.Status == "ready" && isUp == upstream && n.ModifyIndex > after,
			fmt.Sprintf("status %s nomad.version %s nomad.upstream %q modify index %d", n.Status, n.Attributes["nomad.version"], n.Attributes["nomad.upstream"], n.ModifyIndex)
	})
}

// nodeIndexes is every node's modify index by name.
func (u *upgrade) nodeIndexes() map[string]uint64 {
	u.t.Helper()
	nodes, _, err := u.nodeStatuses()
	must.NoError(u.t, err)
	out := map[string]uint64{}
	for name, n := range nodes {
		out[name] = n.ModifyIndex
	}
	return out
}

// settleReady waits until both nodes have stayed ready for longer than a
// node's TTL and grace on our servers (2 s each): their clients
// heartbeat to our servers. A node that went disconnected on the way
// (an upstream client just restarted, on a loaded machine) restarts the
// count, and is logged: the feature's rules cover it, and the
// allocations must come through it, which the callers check after.
func (u *upgrade) settleReady(what string) {
	u.t.Helper()
	const steady = 6 * time.Second
	var since time.Time
	var flaps []string
	wait.Poll(u.t, 60*time.Second, what, func() (bool, string) {
		u.mustNotHaveDied()
		nodes, seen, err := u.nodeStatuses()
		if err != nil {
			since = time.Time{}
			return false, err.Error()
		}
		for name := range u.nodes {
			if nodes[name] == nil || nodes[name].ID != u.nodes[name] || nodes[name].Status != "ready" {
				if !since.IsZero() {
					flaps = append(flaps, seen)
				}
				since = time.Time{}
				return false, "nodes " + seen
			}
		}
		if since.IsZero() {
			since = time.Now()
		}
		return time.Since(since) >= steady, fmt.Sprintf("nodes %s, ready for %v", seen, time.Since(since).Round(time.Millisecond))
	})
	if len(flaps) > 0 {
		u.t.Logf("%s: a node left ready on the way: %v", what, flaps)
	}
}

// TestUpgradeUpstreamClusterInPlace is the whole in-place upgrade of
// upgrading.md, with real processes: an upstream 1.6.5 cluster of three
// servers and two clients runs two jobs with disconnect windows
// (max_client_disconnect, one allocation per client each); its snapshot
// is restored into three of our servers; the upstream clients are
// pointed at ours (restarted on a new client.servers, re-attaching to
// their executors); then each client is replaced by ours on its data_dir,
// the second one cut off long enough on the way for its node to be
// disconnected. At every step the same nodes, the same allocation IDs and
// no other, the same task processes, no restart; the node cut off is
// disconnected with its allocations unknown (not down, not lost), and
// comes back ready with them running; the evaluations its absence made
// (the window's timeout, a delayed replacement) are cancelled or run
// and place nothing. Three upstream servers, as asked: on two cores
// they elect in about a second, no slower than one.
func TestUpgradeUpstreamClusterInPlace(t *testing.T) {
	upstreamBin := harness.UnpackTool(t, upstreamGz, t.TempDir())
	start := time.Now()
	step := func(what string) { t.Logf("[%5.1fs] %s", time.Since(start).Seconds(), what) }
	ags := harness.NewAgents(t)

	// 1. The upstream cluster: three servers, two clients.
	upPorts := []harness.Ports{harness.FreePorts(t), harness.FreePorts(t), harness.FreePorts(t)}
	var upServers []*harness.Agent
	for i, p := range upPorts {
		upServers = append(upServers, ags.Add(harness.AgentConfig{
			Name: fmt.Sprintf("upstream-server-%d", i+1), Bin: upstreamBin, Ports: p,
			Config: upstreamServerConfig(i+1, p, serfAddrs(upPorts, i)),
		}))
	}
	for _, s := range upServers {
		s.Start()
	}
	waitLeader(t, upServers, "upstream's")
	step("upstream's three servers have a leader")

	names := []string{"client-1", "client-2"}
	upClients := map[string]*harness.Agent{}
	for _, name := range names {
		p := harness.FreePorts(t)
		dir := filepath.Join(ags.Dir, "upstream-"+name, "data")
		upClients[name] = ags.Add(harness.AgentConfig{
			Name: "upstream-" + name, Bin: upstreamBin, Ports: p,
			Config: upstreamClientConfig(name, dir, p, rpcAddrs(upServers)),
		})
		must.Eq(t, dir, upClients[name].DataDir)
		upClients[name].Start()
	}
	u := &upgrade{t: t, servers: upServers, api: upServers[0].API, allocs: map[string]origAlloc{}, nodes: map[string]string{}}
	wait.Poll(t, 60*time.Second, "both upstream nodes ready on upstream's servers", func() (bool, string) {
		u.mustNotHaveDied()
		nodes, seen, err := u.nodeStatuses()
		if err != nil {
			return false, err.Error()
		}
		for _, name := range names {
			if nodes[name] == nil || nodes[name].Status != "ready" {
				return false, seen
			}
		}
		return len(nodes) == 2, seen
	})
	nodes, _, err := u.nodeStatuses()
	must.NoError(t, err)
	for _, name := range names {
		u.nodes[name] = nodes[name].ID
	}
	step("both upstream clients ready")

	// 2. The jobs, and what they run.
	for _, id := range upgradeJobs {
		_, _, err := u.api().Jobs().Register(windowJob(id), nil)
		must.NoError(t, err)
	}
	wait.Poll(t, 90*time.Second, "every job's two allocations running, one per node, its deployment successful", func() (bool, string) {
		u.mustNotHaveDied()
		allocs, seen, err := u.allAllocs()
		if err != nil {
			return false, err.Error()
		}
		perNode := map[string]int{}
		for _, a := range allocs {
			if a.ClientStatus != "running" {
				return false, seen
			}
			perNode[a.NodeName]++
		}
		if len(allocs) != 4 || perNode["client-1"] != 2 || perNode["client-2"] != 2 {
			return false, seen
		}
		for _, job := range upgradeJobs {
			d, _, err := u.api().Jobs().LatestDeployment(job, nil)
			if err != nil {
				return false, err.Error()
			}
			if d == nil || d.Status != "successful" {
				return false, fmt.Sprintf("%s's deployment %v; %s", job, d, seen)
			}
		}
		return true, seen
	})
	allocs, seen, err := u.allAllocs()
	must.NoError(t, err)
	for id, a := range allocs {
		u.allocs[id] = origAlloc{job: a.JobID, nodeID: a.NodeID, nodeName: a.NodeName, pid: taskPID(t, id)}
	}
	step("upstream runs " + seen)
	u.mustKeepPIDs("on upstream")

	// 3. The snapshot, upstream's CLI against upstream's servers; then
	// upstream's servers go and ours take the state.
	snap := filepath.Join(t.TempDir(), "upstream.snap")
	save := exec.Command(upstreamBin, "operator", "snapshot", "save", snap)
	save.Env = append(os.Environ(), "NOMAD_ADDR="+upServers[1].HTTPAddr())
	out, err := save.CombinedOutput()
	must.NoError(t, err, must.Sprintf("upstream's snapshot save: %s", out))
	for _, s := range upServers {
		s.Stop()
	}
	step("upstream snapshot saved, upstream's servers stopped")

	ourPorts := []harness.Ports{harness.FreePorts(t), harness.FreePorts(t), harness.FreePorts(t)}
	var ours []*harness.Agent
	for i, p := range ourPorts {
		ours = append(ours, ags.Add(harness.AgentConfig{
			Name: fmt.Sprintf("server-%d", i+1), Ports: p,
			Config: ourServerConfig(i+1, p, serfAddrs(ourPorts, i)),
		}))
	}
	for _, s := range ours {
		s.Start()
	}
	u.servers, u.api = ours, ours[0].API
	waitLeader(t, ours, "our")
	out2, code := ours[2].Nomad("operator", "snapshot", "inspect", snap)
	must.Eq(t, 0, code, must.Sprint(out2))
	must.StrContains(t, out2, "upstream Nomad")
	out2, code = ours[1].Nomad("operator", "snapshot", "restore", snap)
	must.Eq(t, 0, code, must.Sprint(out2))
	must.Eq(t, "Snapshot Restored", strings.TrimSpace(out2))
	for _, s := range ours {
		wait.Poll(t, 30*time.Second, s.Name+" holds the upstream jobs", func() (bool, string) {
			ids, err := jobIDsOn(s)
			if err != nil {
				return false, err.Error()
			}
			return slices.Equal(ids, []string{"cache", "web"}), fmt.Sprint("jobs ", ids)
		})
	}
	u.waitNodes("") // the same two nodes, whatever their status
	wait.Poll(t, 10*time.Second, "the original allocations, and no other, on our servers", func() (bool, string) {
		allocs, seen, err := u.allAllocs()
		if err != nil {
			return false, err.Error()
		}
		if err := u.onlyOriginals(allocs); err != nil {
			return false, err.Error() + ": " + seen
		}
		return true, seen
	})
	for _, job := range upgradeJobs {
		j, _, err := u.api().Jobs().Info(job, nil)
		must.NoError(t, err)
		//lint:ignore SA1019 the window as upstream wrote it
		window := j.TaskGroups[0].MaxClientDisconnect
		must.NotNil(t, window, must.Sprint("the window came through the snapshot"))
		must.Eq(t, 2*time.Minute, *window)
	}
	_, seenNodes, _ := u.nodeStatuses()
	_, seen, _ = u.allAllocs()
	step("snapshot restored into our three servers: nodes " + seenNodes + "; allocations " + seen)
	u.mustKeepPIDs("after the restore")
	// Until a client is heard the leader gives a node the failover TTL
	// (5 min): the restored nodes stay as they were, and a write to one
	// after this index is its client registering with our servers.
	restored := u.nodeIndexes()

	// 4. The upstream clients, told of our servers (client.servers) and
	// restarted, re-attach to their executors and register with ours.
	for _, name := range names {
		c := upClients[name]
		c.Stop()
		cfg := upstreamClientConfig(name, c.DataDir, c.Ports, rpcAddrs(ours))
		must.NoError(t, os.WriteFile(c.CfgPath, []byte(cfg), 0o644))
		c.Start()
	}
	for _, name := range names {
		u.waitNodeIs(name, true, restored[name])
	}
	u.settleReady("both upstream clients heartbeating to our servers, their nodes ready 6s in a row")
	u.waitAllocs("running", names...)
	u.mustKeepPIDs("upstream clients on our servers")
	_, seen, _ = u.allAllocs()
	step("upstream clients on our servers: " + seen)

	// 5a. Client 1 replaced by ours on its data_dir.
	oursClients := map[string]*harness.Agent{}
	replace := func(name string) {
		p := harness.FreePorts(t)
		dir := upClients[name].DataDir
		oursClients[name] = ags.Add(harness.AgentConfig{
			Name: "our-" + name, Ports: p,
			Config: ourClientConfig(name, dir, p, rpcAddrs(ours)),
		})
		oursClients[name].Start()
	}
	before := u.nodeIndexes()
	upClients["client-1"].Stop()
	replace("client-1")
	u.waitNodeIs("client-1", false, before["client-1"])
	u.waitTakenOver("client-1")
	u.waitNodes("ready", names...)
	u.waitAllocs("running", names...)
	u.mustKeepPIDs("client-1 ours")
	step("client-1 replaced by ours")

	// 5b. Client 2 cut off during its upgrade: its upstream agent stopped
	// and ours not started until the servers have marked the node
	// disconnected. Within the window its allocations are unknown, not
	// lost, their tasks live on, and nothing replaces them: the
	// replacement the reconciler wants for an unknown allocation waits
	// for the reschedule policy's delay (30 s, an alloc-failure
	// evaluation, checked below), and distinct_hosts would leave it no
	// node anyway (each job's other allocation is on client-1).
	upClients["client-2"].Stop()
	before = u.nodeIndexes()
	u.waitNodes("disconnected", "client-2")
	u.waitAllocs("unknown", "client-2")
	step("client-2 cut off: disconnected, its allocations unknown")
	harness.Hold(t, 6*time.Second, "client-2 stays disconnected, its allocations unknown, nothing placed, client-1's untouched", func() error {
		u.mustNotHaveDied()
		nodes, seen, err := u.nodeStatuses()
		if err != nil {
			return err
		}
		if nodes["client-2"].Status != "disconnected" || nodes["client-1"].Status != "ready" {
			return fmt.Errorf("nodes %s", seen)
		}
		allocs, seen, err := u.allAllocs()
		if err != nil {
			return err
		}
		if err := u.onlyOriginals(allocs); err != nil {
			return fmt.Errorf("%v: %s", err, seen)
		}
		for id, o := range u.allocs {
			want := "running"
			if o.nodeName == "client-2" {
				want = "unknown"
			}
			if a := allocs[id]; a.ClientStatus != want || a.DesiredStatus != "run" {
				return fmt.Errorf("%s is %s/%s, want %s/run: %s", id[:8], a.ClientStatus, a.DesiredStatus, want, seen)
			}
			if !harness.Alive(o.pid) {
				return fmt.Errorf("%s's task process %d died", id[:8], o.pid)
			}
		}
		return nil
	})
	replace("client-2")
	u.waitNodeIs("client-2", false, before["client-2"])
	u.waitTakenOver("client-2")
	u.waitNodes("ready", names...)
	u.waitAllocs("running", names...)
	u.mustKeepPIDs("client-2 ours")
	step("client-2 back, ours")

	// What the schedulers made of client-2's time away: an evaluation per
	// job when it went (node-update), with a max-disconnect-timeout one
	// for the window's end and, by the reschedule policy (30 s delay),
	// an alloc-failure one for a replacement later; one (reconnect) when
	// it came back, which cancels the window's. Every one that was
	// pending must run out and place nothing: the originals are kept.
	wait.Poll(t, 90*time.Second, "every evaluation of the jobs done", func() (bool, string) {
		u.mustNotHaveDied()
		var open []string
		for _, job := range upgradeJobs {
			evals, _, err := u.api().Jobs().Evaluations(job, nil)
			if err != nil {
				return false, err.Error()
			}
			for _, e := range evals {
				if e.Status != "complete" && e.Status != "canceled" {
					open = append(open, fmt.Sprintf("%s %s %s %s wait until %s", job, e.ID[:8], e.TriggeredBy, e.Status, e.WaitUntil.Format(time.RFC3339)))
				}
			}
		}
		return len(open) == 0, fmt.Sprintf("now %s, open: %v", time.Now().Format(time.RFC3339), open)
	})
	for _, job := range upgradeJobs {
		evals, _, err := u.api().Jobs().Evaluations(job, nil)
		must.NoError(t, err)
		sort.Slice(evals, func(i, j int) bool { return evals[i].CreateIndex < evals[j].CreateIndex })
		for _, e := range evals {
			t.Logf("%s: eval %s %s %s queued %v failed placements %d blocked eval %q wait until %s", job, e.ID[:8], e.TriggeredBy, e.Status, e.QueuedAllocations, len(e.FailedTGAllocs), e.BlockedEval, e.WaitUntil.Format(time.RFC3339))
		}
	}
	step("every evaluation done")

	// The history of each of client-2's allocations holds its time
	// unknown.
	for id, o := range u.allocs {
		var a struct {
			AllocStates []struct {
				Field int // 0: ClientStatus
				Value string
			}
		}
		must.NoError(t, ours[0].GetJSON("/v1/allocation/"+id, &a))
		var hist []string
		for _, s := range a.AllocStates {
			hist = append(hist, fmt.Sprintf("%d=%s", s.Field, s.Value))
		}
		if o.nodeName == "client-2" {
			must.SliceContains(t, hist, "0=unknown", must.Sprintf("%s's history", id[:8]))
		}
		t.Logf("%s on %s: alloc states %v", id[:8], o.nodeName, hist)
	}

	// 6. The end: both nodes ours and ready, every original allocation
	// running with its original process, no restart, no other allocation.
	harness.Hold(t, 6*time.Second, "the upgraded cluster keeps every original allocation running, unrestarted, and no other", func() error {
		u.mustNotHaveDied()
		nodes, seen, err := u.nodeStatuses()
		if err != nil {
			return err
		}
		for _, name := range names {
			if nodes[name].Status != "ready" || nodes[name].ID != u.nodes[name] {
				return fmt.Errorf("nodes %s", seen)
			}
		}
		allocs, seen, err := u.allAllocs()
		if err != nil {
			return err
		}
		if err := u.onlyOriginals(allocs); err != nil {
			return fmt.Errorf("%v: %s", err, seen)
		}
		for id, o := range u.allocs {
			a := allocs[id]
			if ts := a.TaskStates["sleep"]; a.ClientStatus != "running" || ts == nil || ts.State != "running" || ts.Restarts != 0 {
				return fmt.Errorf("%s not running unrestarted: %s", id[:8], seen)
			}
			if pids := harness.AllocPIDs(id); !slices.Equal(pids, []int{o.pid}) {
				return fmt.Errorf("%s's task processes %v, want its original %d", id[:8], pids, o.pid)
			}
		}
		return nil
	})
	for _, job := range upgradeJobs {
		s, _, err := u.api().Jobs().Summary(job, nil)
		must.NoError(t, err)
		tg := s.Summary["sleep"]
		must.Eq(t, 2, tg.Running, must.Sprintf("%s's summary %+v", job, tg))
		must.Eq(t, 0, tg.Unknown+tg.Lost+tg.Queued+tg.Starting, must.Sprintf("%s's summary %+v", job, tg))
	}
	_, seen, _ = u.allAllocs()
	step("upgraded: " + seen)

	// For the record: every node status change our servers made, and
	// what the upstream clients said of their heartbeats.
	var lines []string
	for _, a := range append(append([]*harness.Agent{}, ours...), upClients["client-1"], upClients["client-2"]) {
		for _, l := range strings.Split(a.Log(), "\n") {
			if strings.Contains(l, "missed its heartbeats") || strings.Contains(l, "node ready") ||
				strings.Contains(l, "heartbeat") && a.Name != "server-1" && a.Name != "server-2" && a.Name != "server-3" {
				lines = append(lines, a.Name+": "+strings.TrimSpace(l))
			}
		}
	}
	t.Logf("node status changes and upstream heartbeat messages:\n%s", strings.Join(lines, "\n"))
}

// jobIDsOn lists the jobs server s holds itself (?stale: no forwarding).
func jobIDsOn(s *harness.Agent) ([]string, error) {
	var jobs []struct{ ID string }
	if err := s.GetJSON("/v1/jobs?stale", &jobs); err != nil {
		return nil, err
	}
	var ids []string
	for _, j := range jobs {
		ids = append(ids, j.ID)
	}
	slices.Sort(ids)
	return ids, nil
}
