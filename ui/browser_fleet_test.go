package ui_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client"
	"github.com/nomad-edge/nomad/command/agent"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil"
	"github.com/nomad-edge/nomad/testutil/fault"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// The fleet page (issue 29) answers an operator's first question in an
// outage without a reload: opened with every node ready, it shows a cut
// client in its datacenter's and pool's tiles and as a disconnected node
// with when it was last heard from, its allocation unknown with its
// window and its replacement; once the link heals, the node is back and
// the timeline shows the disconnect and the reconnect decision.
func TestUI_BrowserFleetShowsOutage(t *testing.T) {
	b := browser(t)
	a := agenttest.NewDevAgent(t, func(c *agent.Config) {
		c.Client.Enabled = false
		c.Server.MinHeartbeatTTL = 300 * time.Millisecond
		c.Server.HeartbeatGrace = 300 * time.Millisecond
	})
	// edge-1 gets the allocation, being the only node when the job is
	// registered; edge-2 joins afterwards to take its replacement.
	link := testutil.NewFaultableRPC(a.Server())
	edge1 := fleetClient(t, link, "edge-1")
	job := edgeJob()
	job.ID = "fleet-app"
	tg := job.TaskGroups[0]
	replace := true
	tg.Disconnect.Replace = &replace
	tg.ReschedulePolicy = &structs.ReschedulePolicy{Delay: time.Second, DelayFunction: "constant", Unlimited: true}
	var reg structs.JobRegisterResponse
	must.NoError(t, a.Server().RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &reg))
	var allocID string
	wait.Poll(t, 20*time.Second, "the allocation running on edge-1", func() (bool, string) {
		allocs, err := a.Server().State().AllocsByJob(nil, job.Namespace, job.ID, true)
		must.NoError(t, err)
		if len(allocs) != 1 || allocs[0].ClientStatus != structs.AllocClientStatusRunning {
			return false, fmt.Sprint(len(allocs), " allocs")
		}
		allocID = allocs[0].ID
		return true, ""
	})
	fleetClient(t, testutil.NewFaultableRPC(a.Server()), "edge-2")

	page := tab(t, b, a.HTTPAddr+"/ui/fleet")
	waitFor(t, page, 20*time.Second, "the event stream followed", `#live[data-state="live"]`)
	waitFor(t, page, 20*time.Second, "both nodes ready in dc1's tile", `#fleet-page .tile[data-kind="datacenter"][data-name="dc1"][data-ready="2"][data-disconnected="0"]`)
	waitFor(t, page, 5*time.Second, "both nodes ready in the edge pool's tile", `.tile[data-kind="pool"][data-name="edge"][data-ready="2"][data-disconnected="0"]`)
	waitFor(t, page, 5*time.Second, "no disconnected node", `#fleet-page[data-disconnected="0"][data-unknown="0"]`)
	must.StrContains(t, textOf(t, page, "nav"), "Fleet")

	link.Cut(fault.Reset)
	cut := time.Now()
	node := fmt.Sprintf(`table.disconnected tr[data-node-id=%q][data-status="disconnected"]`, edge1.NodeID())
	row := fmt.Sprintf(`table.unknown-allocs tr[data-alloc-id=%q][data-status="unknown"]`, allocID)
	// Detection takes the heartbeat TTL and grace (0.6s here) plus the
	// reconciler's pass; the deadline leaves room for a loaded machine.
	waitFor(t, page, 30*time.Second, "edge-1 listed as disconnected", node)
	t.Logf("the fleet page showed edge-1 disconnected %v after the cut", time.Since(cut).Round(time.Millisecond))
	waitFor(t, page, 10*time.Second, "dc1's tile counting 1 disconnected", `.tile.tile-alert[data-kind="datacenter"][data-name="dc1"][data-ready="1"][data-disconnected="1"]`)
	waitFor(t, page, 10*time.Second, "the edge pool's tile counting 1 disconnected", `.tile.tile-alert[data-kind="pool"][data-name="edge"][data-disconnected="1"]`)
	waitFor(t, page, 30*time.Second, "the allocation unknown", row)
	waitFor(t, page, 30*time.Second, "its replacement placed on edge-2", row+`[data-replacement="placed"]`)
	nodeText := textOf(t, page, node)
	must.StrContains(t, nodeText, "last heard from before")
	must.StrContains(t, nodeText, "in 59m") // the first window ends lost_after (1h) after the disconnect
	rowText := textOf(t, page, row)
	must.StrContains(t, rowText, "lost_after 1h")
	must.StrContains(t, rowText, "edge-2")
	waitFor(t, page, 10*time.Second, "the disconnect in the timeline", `table.timeline tr[data-kind="disconnect"]`)
	screenshot(t, page, "ui-fleet-outage.png")

	link.Heal()
	waitFor(t, page, 30*time.Second, "edge-1 ready again in dc1's tile", `.tile[data-kind="datacenter"][data-name="dc1"][data-ready="2"][data-disconnected="0"]`)
	waitFor(t, page, 30*time.Second, "no allocation unknown", `#fleet-page[data-disconnected="0"][data-unknown="0"]`)
	waitFor(t, page, 30*time.Second, "the reconnect decision in the timeline", `table.timeline tr[data-kind="decision"]`)
	waitFor(t, page, 5*time.Second, "the reconnect in the timeline", `table.timeline tr[data-kind="reconnect"]`)
	decision := textOf(t, page, `table.timeline tr[data-kind="decision"]`)
	must.StrContains(t, decision, "kept "+allocID[:8])
	must.StrContains(t, decision, "keep_original")
}

// A site outage the servers declare shows on the fleet page: the outage
// with why it was declared, the site's tile marked, and the unknown
// allocation's replacement held by it although another datacenter could
// take one, the declaration in the timeline; when the site comes back the
// outage is gone from the page.
func TestUI_BrowserFleetShowsSiteOutage(t *testing.T) {
	b := browser(t)
	a := agenttest.NewDevAgent(t, func(c *agent.Config) {
		c.Client.Enabled = false
		c.Server.MinHeartbeatTTL = 300 * time.Millisecond
		c.Server.HeartbeatGrace = 300 * time.Millisecond
	})
	var resp structs.GenericResponse
	must.NoError(t, a.Server().RPC("NodePool.UpsertNodePools", &structs.NodePoolUpsertRequest{NodePools: []*structs.NodePool{{
		Name: "edge", Disconnect: &structs.NodePoolDisconnect{
			SiteOutage: &structs.SiteOutagePolicy{Threshold: 0.5, MinNodes: 1, Window: time.Minute},
		},
	}}}, &resp))
	link := testutil.NewFaultableRPC(a.Server())
	edge1 := fleetClient(t, link, "edge-1", "dc1")
	job := edgeJob()
	job.ID = "site-app"
	job.Datacenters = []string{"dc1", "dc2"}
	replace := true
	job.TaskGroups[0].Disconnect.Replace = &replace
	job.TaskGroups[0].ReschedulePolicy = &structs.ReschedulePolicy{Delay: time.Second, DelayFunction: "constant", Unlimited: true}
	var reg structs.JobRegisterResponse
	must.NoError(t, a.Server().RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &reg))
	var allocID string
	wait.Poll(t, 20*time.Second, "the allocation running on edge-1", func() (bool, string) {
		allocs, err := a.Server().State().AllocsByJob(nil, job.Namespace, job.ID, true)
		must.NoError(t, err)
		if len(allocs) != 1 || allocs[0].ClientStatus != structs.AllocClientStatusRunning {
			return false, fmt.Sprint(len(allocs), " allocs")
		}
		allocID = allocs[0].ID
		return true, ""
	})
	fleetClient(t, testutil.NewFaultableRPC(a.Server()), "edge-2", "dc2")

	page := tab(t, b, a.HTTPAddr+"/ui/fleet")
	waitFor(t, page, 20*time.Second, "the event stream followed", `#live[data-state="live"]`)
	waitFor(t, page, 20*time.Second, "the pool watched for outages, none declared", `#no-outages`)
	must.StrContains(t, textOf(t, page, "#no-outages"), "edge (50% of a datacenter's nodes, at least 1, within 1m)")

	link.Cut(fault.Reset)
	waitFor(t, page, 30*time.Second, "the site outage declared", `table.outages tr[data-outage="edge/dc1"]`)
	must.StrContains(t, textOf(t, page, `table.outages tr[data-outage="edge/dc1"]`), "1 of 1 nodes disconnected within 1m")
	waitFor(t, page, 10*time.Second, "dc1's tile in the outage", `.tile.tile-alert[data-kind="datacenter"][data-name="dc1"][data-outage="declared"][data-disconnected="1"]`)
	waitFor(t, page, 10*time.Second, "dc2's tile not in it", `.tile[data-kind="datacenter"][data-name="dc2"][data-ready="1"]:not([data-outage])`)
	row := fmt.Sprintf(`table.unknown-allocs tr[data-alloc-id=%q][data-status="unknown"][data-replacement="site-outage"]`, allocID)
	waitFor(t, page, 30*time.Second, "the replacement held by the outage", row)
	must.StrContains(t, textOf(t, page, row), "held by the site outage of dc1 in node pool edge")
	must.StrContains(t, textOf(t, page, fmt.Sprintf(`table.disconnected tr[data-node-id=%q]`, edge1.NodeID())), "in the site outage of dc1 in node pool edge")
	waitFor(t, page, 10*time.Second, "the declaration in the timeline", `table.timeline tr[data-kind="site-outage"]`)
	must.StrContains(t, textOf(t, page, `table.timeline tr[data-kind="site-outage"]`), "Site outage declared for dc1 in node pool edge")
	screenshot(t, page, "ui-fleet-site-outage.png")

	link.Heal()
	waitFor(t, page, 30*time.Second, "the outage cleared once the site is back", `#no-outages`)
	waitFor(t, page, 30*time.Second, "no allocation unknown", `#fleet-page[data-disconnected="0"][data-unknown="0"]`)
}

// fleetClient starts an in-process client in the edge pool of dc (dc1 by
// default) whose link to the servers is rpc, and waits for it to register.
func fleetClient(t *testing.T, rpc *testutil.FaultableRPC, name string, dc ...string) *client.Client {
	t.Helper()
	dir := t.TempDir()
	cfg := &client.Config{RPCHandler: rpc, StateDir: dir, AllocDir: dir + "/alloc", NodeName: name, NodePool: "edge"}
	if len(dc) > 0 {
		cfg.Datacenter = dc[0]
	}
	cl, err := client.NewClient(cfg)
	must.NoError(t, err)
	t.Cleanup(func() { _ = cl.Destroy() })
	select {
	case <-cl.Ready():
	case <-time.After(30 * time.Second):
		t.Fatalf("client %s did not register within 30s", name)
	}
	return cl
}
