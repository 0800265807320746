package agent_test

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/nomad-edge/nomad/testutil/wait"

	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// The official Go client manages node pools against our agent as against
// upstream: the built-in pools are listed, a pool registers and reads
// back, jobs and nodes of a pool are listed, a job in a missing pool is a
// 400 naming it, and a pool with a live job cannot be deleted.
func TestAgent_NodePools_OfficialClient(t *testing.T) {
	dev := agenttest.NewDevAgent(t, nil)
	c, err := nomadapi.NewClient(&nomadapi.Config{Address: dev.HTTPAddr})
	must.NoError(t, err)
	np := c.NodePools()

	list, qm, err := np.List(nil)
	must.NoError(t, err)
	must.Positive(t, qm.LastIndex)
	names := map[string]string{}
	for _, p := range list {
		names[p.Name] = p.Description
	}
	must.Eq(t, map[string]string{"all": "Node pool with all nodes in the cluster.", "default": "Default node pool."}, names)

	wm, err := np.Register(&nomadapi.NodePool{Name: "edge", Description: "LTE sites", Meta: map[string]string{"link": "lte"}}, nil)
	must.NoError(t, err)
	must.Positive(t, wm.LastIndex)
	info, _, err := np.Info("edge", nil)
	must.NoError(t, err)
	must.Eq(t, "LTE sites", info.Description)
	must.Eq(t, "lte", info.Meta["link"])
	_, _, err = np.Info("nope", nil)
	must.ErrorContains(t, err, "404")

	_, err = np.Register(&nomadapi.NodePool{Name: "sched", SchedulerConfiguration: &nomadapi.NodePoolSchedulerConfiguration{SchedulerAlgorithm: "spread"}}, nil)
	must.ErrorContains(t, err, "scheduler_config is not supported")
	_, err = np.Register(&nomadapi.NodePool{Name: "all", Description: "x"}, nil)
	must.ErrorContains(t, err, `modifying node pool "all" is not allowed`)

	job := nomadapi.NewBatchJob("pooled", "pooled", "global", 50)
	job.NodePool = new("missing")
	job.AddTaskGroup(nomadapi.NewTaskGroup("g", 1).AddTask(
		nomadapi.NewTask("t", "mock_driver").SetConfig("run_for", "1m")))
	_, _, err = c.Jobs().Register(job, nil)
	must.ErrorContains(t, err, "400")
	must.ErrorContains(t, err, `nonexistent node pool "missing"`)

	job.NodePool = new("edge")
	_, _, err = c.Jobs().Register(job, nil)
	must.NoError(t, err)
	jobs, _, err := np.ListJobs("edge", nil)
	must.NoError(t, err)
	must.Len(t, 1, jobs)
	must.Eq(t, "pooled", jobs[0].ID)

	nodes, _, err := np.ListNodes("default", nil)
	must.NoError(t, err)
	must.Len(t, 1, nodes, must.Sprint("the dev agent's client is in the default pool"))
	all, _, err := np.ListNodes("all", nil)
	must.NoError(t, err)
	must.Len(t, 1, all)
	edgeNodes, _, err := np.ListNodes("edge", nil)
	must.NoError(t, err)
	must.Len(t, 0, edgeNodes)

	_, err = np.Delete("edge", nil)
	must.ErrorContains(t, err, "non-terminal jobs: default/pooled")
	_, _, err = c.Jobs().Deregister("pooled", true, nil)
	must.NoError(t, err)
	_, err = np.Delete("edge", nil)
	must.NoError(t, err)
	_, err = np.Delete("default", nil)
	must.ErrorContains(t, err, "400")
}

// GET /v1/node/pools was answered by /v1/node/:id (a node named "pools")
// before; it must be the pool list, while /v1/node/:id/allocations and
// the node actions keep working.
func TestAgent_NodePools_RouteCollision(t *testing.T) {
	dev := agenttest.NewDevAgent(t, nil)
	resp, err := http.Get(dev.HTTPAddr + "/v1/node/pools")
	must.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	must.Eq(t, http.StatusOK, resp.StatusCode, must.Sprint(string(body)))
	var pools []map[string]any
	must.NoError(t, json.Unmarshal(body, &pools))
	must.Len(t, 2, pools)

	c, err := nomadapi.NewClient(&nomadapi.Config{Address: dev.HTTPAddr})
	must.NoError(t, err)
	var nodes []*nomadapi.NodeListStub
	wait.Poll(t, 10*time.Second, "the dev client registered", func() (bool, string) {
		nodes, _, err = c.Nodes().List(nil)
		must.NoError(t, err)
		return len(nodes) == 1, "no node yet"
	})
	_, _, err = c.Nodes().Allocations(nodes[0].ID, nil)
	must.NoError(t, err)
	_, err = c.Nodes().ToggleEligibility(nodes[0].ID, true, nil)
	must.NoError(t, err)
	resp, err = http.Get(dev.HTTPAddr + "/v1/node/" + nodes[0].ID + "/nonsense")
	must.NoError(t, err)
	resp.Body.Close()
	must.Eq(t, http.StatusNotFound, resp.StatusCode)
}

// A job from the official Go client with spreads and a
// distinct_property limit registers (both were refused by name before)
// and reads back with its spreads as upstream's shape.
func TestAgent_SpreadAndDistinctProperty_OfficialClient(t *testing.T) {
	dev := agenttest.NewDevAgent(t, nil)
	c, err := nomadapi.NewClient(&nomadapi.Config{Address: dev.HTTPAddr})
	must.NoError(t, err)
	job := nomadapi.NewServiceJob("spread", "spread", "global", 50)
	job.Datacenters = []string{"dc1", "dc2"}
	job.Spreads = []*nomadapi.Spread{{Attribute: "${node.datacenter}", Weight: new(int8(100)),
		SpreadTarget: []*nomadapi.SpreadTarget{{Value: "dc1", Percent: 70}, {Value: "dc2", Percent: 30}}}}
	tg := nomadapi.NewTaskGroup("g", 2).AddTask(nomadapi.NewTask("t", "mock_driver").SetConfig("run_for", "1m"))
	tg.Spreads = []*nomadapi.Spread{{Attribute: "${meta.rack}"}}
	tg.Constraints = []*nomadapi.Constraint{nomadapi.NewConstraint("${node.unique.id}", "distinct_property", "2")}
	job.AddTaskGroup(tg)
	_, _, err = c.Jobs().Register(job, nil)
	must.NoError(t, err)

	got, _, err := c.Jobs().Info("spread", nil)
	must.NoError(t, err)
	must.Len(t, 1, got.Spreads)
	must.Eq(t, int8(100), *got.Spreads[0].Weight)
	must.Eq(t, uint8(30), got.Spreads[0].SpreadTarget[1].Percent)
	must.Eq(t, int8(50), *got.TaskGroups[0].Spreads[0].Weight, must.Sprint("the default weight is upstream's"))

	bad := nomadapi.NewServiceJob("bad", "bad", "global", 50)
	bad.Spreads = []*nomadapi.Spread{{Attribute: "${node.datacenter}", Weight: new(int8(50)),
		SpreadTarget: []*nomadapi.SpreadTarget{{Value: "dc1", Percent: 70}, {Value: "dc2", Percent: 40}}}}
	bad.AddTaskGroup(nomadapi.NewTaskGroup("g", 1).AddTask(nomadapi.NewTask("t", "mock_driver")))
	_, _, err = c.Jobs().Register(bad, nil)
	must.ErrorContains(t, err, "Sum of spread target percentages must not be greater than 100%")
}
