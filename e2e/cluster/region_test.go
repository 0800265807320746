package cluster

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/e2e/internal/harness"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// Federated regions on real processes: two regions, "global" and "europe",
// each of three servers (its own raft) and one client, every agent in its
// own namespace on one fabric. Europe's servers join global's gossip pool
// by retry_join, as an operator federates regions; nothing else connects
// them.

// regionCluster is one region of a federation on fab: servers at hosts
// base..base+2, its client at base+10; joinOther are serf addresses of
// another region's servers, joined too.
func regionCluster(t *testing.T, fab *harness.Fabric, agents *harness.Agents, region string, base int, joinOther []string) *cluster {
	t.Helper()
	c := &cluster{t: t, agents: agents}
	p := harness.Ports{HTTP: 4646, RPC: 4647, Serf: 4648}
	var ms []*harness.Member
	var rpcs []string
	for i := range 3 {
		m := fab.Add(fmt.Sprintf("%s-server-%d", region, i+1), base+i)
		ms = append(ms, m)
		rpcs = append(rpcs, strconv.Quote(fmt.Sprintf("%s:%d", m.IP, p.RPC)))
	}
	for i, m := range ms {
		join := slices.Clone(joinOther)
		for j, o := range ms {
			if j != i {
				join = append(join, strconv.Quote(fmt.Sprintf("%s:%d", o.IP, p.Serf)))
			}
		}
		cfg := fmt.Sprintf("region = %q\n", region) + serverConfig(m.Name, m.IP, p, 3, join)
		c.servers = append(c.servers, agents.Add(harness.AgentConfig{Name: m.Name, Ports: p, IP: m.IP, Netns: m.NS, Config: cfg}))
	}
	m := fab.Add(region+"-client", base+10)
	cp := harness.Ports{HTTP: p.HTTP}
	c.clients = append(c.clients, agents.Add(harness.AgentConfig{
		Name: m.Name, Ports: cp, IP: m.IP, Netns: m.NS, Config: fmt.Sprintf("region = %q\n", region) + clientConfig(m.Name, m.IP, cp, rpcs),
	}))
	return c
}

// members are the fabric names of the region's agents.
func (c *cluster) members() []string {
	var out []string
	for _, a := range slices.Concat(c.servers, c.clients) {
		out = append(out, a.Name)
	}
	return out
}

// Both regions elect their own leaders and list each other (GET
// /v1/regions, `server members` with a leader per region); a job of
// europe's registered through global runs in europe; `-region` reads
// through either; a region nobody knows is "No path to region"; cut off
// from each other both regions take their own jobs, and after the heal
// forwarding works again.
func TestRegions_Federated(t *testing.T) {
	fab := harness.NewFabric(t)
	agents := harness.NewAgents(t)
	global := regionCluster(t, fab, agents, "global", 10, nil)
	gJoin := strconv.Quote(fmt.Sprintf("%s:%d", global.servers[0].IP, global.servers[0].Ports.Serf))
	europe := regionCluster(t, fab, agents, "europe", 30, []string{gJoin})
	global.startServers()
	europe.startServers()
	global.startClients()
	europe.startClients()
	g, e := global.anyServer(), europe.anyServer()

	wait.Poll(t, 30*time.Second, "every server lists both regions", func() (bool, string) {
		for _, s := range slices.Concat(global.servers, europe.servers) {
			regions, err := s.API().Regions().List()
			if err != nil || !slices.Equal(regions, []string{"europe", "global"}) {
				return false, fmt.Sprintf("%s: %v %v", s.Name, regions, err)
			}
		}
		return true, ""
	})
	out, code := g.Nomad("server", "members")
	must.Eq(t, 0, code, must.Sprint(out))
	t.Logf("server members:\n%s", out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	must.Len(t, 7, lines, must.Sprint(out))
	leaders := map[string]int{}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if f[4] == "true" {
			leaders[f[len(f)-1]]++
		}
	}
	must.Eq(t, map[string]int{"global": 1, "europe": 1}, leaders, must.Sprint("one leader marked per region:\n", out))

	// A job of region europe registered through global runs on europe's
	// client and is europe's alone.
	job := sleepJob("eu-web", 1)
	job.Region = new("europe")
	_, _, err := g.API().Jobs().Register(job, nil)
	must.NoError(t, err)
	runs := europe.runningTasks("eu-web", 1, 30*time.Second)
	eNodes, _, err := e.API().Nodes().List(nil)
	must.NoError(t, err)
	must.Len(t, 1, eNodes)
	for _, r := range runs {
		must.Eq(t, eNodes[0].ID, r.NodeID, must.Sprint("placed on europe's client"))
	}
	_, _, err = g.API().Jobs().Info("eu-web", nil)
	must.ErrorContains(t, err, "404", must.Sprint("global's own state has no such job"))
	out, code = g.Nomad("job", "status", "-region", "europe", "eu-web")
	must.Eq(t, 0, code, must.Sprint(out))
	must.StrContains(t, out, "running")
	out, code = g.Nomad("job", "status", "-region", "mars", "eu-web")
	must.Eq(t, 1, code, must.Sprint(out))
	must.StrContains(t, out, "No path to region")

	// Europe cut off from global, both ways, gossip and RPC alike: each
	// region goes on taking its own jobs; a request for the other region
	// fails instead of being served where it does not belong.
	var heals []func()
	for _, name := range europe.members() {
		heals = append(heals, fab.Apply(name, harness.Isolate(global.members()...)))
	}
	global.registerJob(g, sleepJob("g-cut", 1))
	eCut := sleepJob("e-cut", 1)
	eCut.Region = new("europe")
	europe.registerJob(e, eCut)
	europe.runningTasks("eu-web", 1, 5*time.Second)
	var lastErr error
	start := time.Now()
	late := sleepJob("eu-late", 1)
	late.Region = new("europe")
	_, _, lastErr = g.API().Jobs().Register(late, nil)
	must.Error(t, lastErr, must.Sprint("a write for europe through global while cut off"))
	t.Logf("a write for the cut-off region failed after %s: %v", time.Since(start).Round(time.Millisecond), lastErr)
	_, _, err = e.API().Jobs().Info("eu-late", nil)
	must.ErrorContains(t, err, "404")
	_, _, err = g.API().Jobs().Info("eu-late", nil)
	must.ErrorContains(t, err, "404", must.Sprint("not served by the wrong region"))

	for _, heal := range heals {
		heal()
	}
	wait.Poll(t, 60*time.Second, "a write for europe through global after the heal", func() (bool, string) {
		_, _, err := g.API().Jobs().Register(late, nil)
		return err == nil, fmt.Sprint(err)
	})
	europe.runningTasks("eu-late", 1, 30*time.Second)
}
