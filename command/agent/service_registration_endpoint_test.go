package agent_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// serviceJob is a mock_driver job of count instances with a group service
// on a dynamic port, its name interpolated, built with the official
// client's types (provider set: the official client's default is consul).
func serviceJob(id string, count int) *nomadapi.Job {
	job := mockJob(id, "mock_driver", map[string]any{"run_for": "5m"})
	g := job.TaskGroups[0]
	g.Count = new(count)
	g.Networks = []*nomadapi.NetworkResource{{DynamicPorts: []nomadapi.Port{{Label: "http"}}}}
	g.Services = []*nomadapi.Service{{
		Name: "${NOMAD_JOB_NAME}-api", PortLabel: "http", Tags: []string{"v1", "${NOMAD_GROUP_NAME}"}, Provider: "nomad",
	}}
	return job
}

// waitInstances follows GET /v1/service/:name with blocking queries until
// it holds n instances, and returns them.
func waitInstances(t *testing.T, c *nomadapi.Client, name string, n int) []*nomadapi.ServiceRegistration {
	t.Helper()
	var index uint64
	deadline := time.Now().Add(30 * time.Second)
	for {
		regs, qm, err := c.Services().Get(name, &nomadapi.QueryOptions{WaitIndex: index, WaitTime: 2 * time.Second})
		must.NoError(t, err)
		if len(regs) == n {
			return regs
		}
		index = qm.LastIndex
		if time.Now().After(deadline) {
			t.Fatalf("service %s: want %d instances within 30s, last saw %d: %v", name, n, len(regs), regs)
		}
	}
}

// TestHTTP_OfficialClientServices drives the catalog through the official
// Go client, as integrators do: a job's group service is registered by
// the client once its allocations run (name and tags interpolated, the
// allocation's host port), listed by Services().List, read by Get with
// filter and choose, by allocation and by job, and its instances leave
// with the job, waking a blocking query.
func TestHTTP_OfficialClientServices(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	c := officialClient(t, a)
	_, _, err := c.Jobs().Register(serviceJob("shop", 2), nil)
	must.NoError(t, err)

	regs := waitInstances(t, c, "shop-api", 2)
	for _, r := range regs {
		must.Eq(t, []string{"v1", "web"}, r.Tags)
		must.Eq(t, "shop", r.JobID)
		must.Eq(t, "dc1", r.Datacenter)
		must.Positive(t, r.Port)
		must.NotEq(t, "", r.Address)
	}
	alloc, _, err := c.Allocations().Info(regs[0].AllocID, nil)
	must.NoError(t, err)
	must.Eq(t, alloc.AllocatedResources.Shared.Ports[0].Value, regs[0].Port)

	list, _, err := c.Services().List(nil)
	must.NoError(t, err)
	must.Eq(t, []*nomadapi.ServiceRegistrationListStub{{Namespace: "default",
		Services: []*nomadapi.ServiceRegistrationStub{{ServiceName: "shop-api", Tags: []string{"v1", "web"}}}}}, list)
	list, _, err = c.Services().List(&nomadapi.QueryOptions{Namespace: "*"})
	must.NoError(t, err)
	must.Len(t, 1, list)

	filtered, _, err := c.Services().Get("shop-api", &nomadapi.QueryOptions{Filter: fmt.Sprintf("AllocID == %q", regs[1].AllocID)})
	must.NoError(t, err)
	must.Len(t, 1, filtered)
	must.Eq(t, regs[1].ID, filtered[0].ID)
	chosen, _, err := c.Services().Get("shop-api", &nomadapi.QueryOptions{Params: map[string]string{"choose": "1|user-7"}})
	must.NoError(t, err)
	must.Len(t, 1, chosen)
	again, _, err := c.Services().Get("shop-api", &nomadapi.QueryOptions{Params: map[string]string{"choose": "1|user-7"}})
	must.NoError(t, err)
	must.Eq(t, chosen[0].ID, again[0].ID)
	_, _, err = c.Services().Get("shop-api", &nomadapi.QueryOptions{Params: map[string]string{"choose": "one"}})
	code, _ := statusOf(t, err)
	must.Eq(t, http.StatusBadRequest, code)

	byAlloc, _, err := c.Allocations().Services(regs[0].AllocID, nil)
	must.NoError(t, err)
	must.Len(t, 1, byAlloc)
	byJob, _, err := c.Jobs().Services("shop", nil)
	must.NoError(t, err)
	must.Len(t, 2, byJob)
	_, _, err = c.Jobs().Services("nope", nil)
	code, _ = statusOf(t, err)
	must.Eq(t, http.StatusNotFound, code)

	// An operator deletes one instance; stopping the job removes the
	// rest, which a blocking query sees without polling.
	_, err = c.Services().Delete("shop-api", regs[0].ID, nil)
	must.NoError(t, err)
	_, err = c.Services().Delete("shop-api", regs[0].ID, nil)
	code, _ = statusOf(t, err)
	must.Eq(t, http.StatusNotFound, code)
	_, _, err = c.Jobs().Deregister("shop", false, nil)
	must.NoError(t, err)
	must.SliceEmpty(t, waitInstances(t, c, "shop-api", 0))
}
