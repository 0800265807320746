package agent_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/nomad-edge/nomad/testutil/wait"

	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// registerJobs registers ids as sleeping mock jobs through the official
// client and returns the eval IDs, in order.
func registerJobs(t *testing.T, c *nomadapi.Client, ids ...string) []string {
	t.Helper()
	var evals []string
	for _, id := range ids {
		resp, _, err := c.Jobs().Register(mockJob(id, "mock_driver", map[string]any{"run_for": "5m"}), nil)
		must.NoError(t, err)
		evals = append(evals, resp.EvalID)
	}
	return evals
}

// Filter, per_page, next_token and reverse work on the jobs list through
// the official client's QueryOptions, the way scripts page a big cluster.
func TestHTTP_ListSemantics_Jobs(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	c := officialClient(t, a)
	registerJobs(t, c, "job-c", "job-a", "job-b", "other")

	jobs, _, err := c.Jobs().List(&nomadapi.QueryOptions{Filter: `ID matches "^job-"`})
	must.NoError(t, err)
	must.Eq(t, []string{"job-a", "job-b", "job-c"}, jobIDs(jobs))

	jobs, meta, err := c.Jobs().List(&nomadapi.QueryOptions{PerPage: 2})
	must.NoError(t, err)
	must.Eq(t, []string{"job-a", "job-b"}, jobIDs(jobs))
	must.Eq(t, "job-c", meta.NextToken)

	jobs, meta, err = c.Jobs().List(&nomadapi.QueryOptions{PerPage: 2, NextToken: meta.NextToken})
	must.NoError(t, err)
	must.Eq(t, []string{"job-c", "other"}, jobIDs(jobs))
	must.Eq(t, "", meta.NextToken)

	// The official client sorts what it gets by ID, so the page shows
	// which jobs a reversed list starts with, not their order.
	jobs, _, err = c.Jobs().List(&nomadapi.QueryOptions{Reverse: true, PerPage: 3, Filter: `Status != "dead"`})
	must.NoError(t, err)
	must.Eq(t, []string{"job-b", "job-c", "other"}, jobIDs(jobs))
}

func getJSON(t *testing.T, url string, out any) {
	t.Helper()
	resp, err := http.Get(url)
	must.NoError(t, err)
	defer resp.Body.Close()
	must.Eq(t, http.StatusOK, resp.StatusCode)
	must.NoError(t, json.NewDecoder(resp.Body).Decode(out))
}

func jobIDs(jobs []*nomadapi.JobListStub) []string {
	var ids []string
	for _, j := range jobs {
		ids = append(ids, j.ID)
	}
	return ids
}

// The other lists honour the same parameters: evaluations (with
// upstream's filter_job_id), allocations, nodes, namespaces, a job's
// allocations and evaluations.
func TestHTTP_ListSemantics_OtherLists(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	c := officialClient(t, a)
	evals := registerJobs(t, c, "one", "two", "three")

	got, _, err := c.Evaluations().List(&nomadapi.QueryOptions{Filter: `JobID == "two"`})
	must.NoError(t, err)
	must.Len(t, 1, got)
	must.Eq(t, evals[1], got[0].ID)

	all, _, err := c.Evaluations().List(nil)
	must.NoError(t, err)
	must.Len(t, 3, all)
	first, meta, err := c.Evaluations().List(&nomadapi.QueryOptions{PerPage: 1})
	must.NoError(t, err)
	must.Len(t, 1, first)
	must.NotEq(t, "", meta.NextToken)
	rest, meta, err := c.Evaluations().List(&nomadapi.QueryOptions{NextToken: meta.NextToken})
	must.NoError(t, err)
	must.Len(t, 2, rest)
	must.Eq(t, "", meta.NextToken)
	// The official client re-sorts evaluations, so the order is read raw.
	var asc, desc []nomadapi.Evaluation
	getJSON(t, a.HTTPAddr+"/v1/evaluations", &asc)
	getJSON(t, a.HTTPAddr+"/v1/evaluations?reverse=true", &desc)
	must.Len(t, 3, desc)
	must.Eq(t, asc[0].ID, desc[2].ID)
	must.Eq(t, asc[2].ID, desc[0].ID)

	byJob, _, err := c.Evaluations().List(&nomadapi.QueryOptions{Params: map[string]string{"filter_job_id": "three"}})
	must.NoError(t, err)
	must.Len(t, 1, byJob)
	must.Eq(t, evals[2], byJob[0].ID)

	wait.Poll(t, 10e9, "three allocations", func() (bool, string) {
		allocs, _, err := c.Allocations().List(nil)
		must.NoError(t, err)
		return len(allocs) == 3, fmt.Sprint(len(allocs), " allocations")
	})
	allocs, _, err := c.Allocations().List(&nomadapi.QueryOptions{Filter: `JobID == "one"`})
	must.NoError(t, err)
	must.Len(t, 1, allocs)
	must.Eq(t, "one", allocs[0].JobID)
	allocs, meta, err = c.Allocations().List(&nomadapi.QueryOptions{PerPage: 2})
	must.NoError(t, err)
	must.Len(t, 2, allocs)
	must.NotEq(t, "", meta.NextToken)

	// task_states=false leaves the task states out, as upstream.
	wait.Poll(t, 10e9, "task states reported", func() (bool, string) {
		full, _, err := c.Allocations().List(&nomadapi.QueryOptions{Filter: `JobID == "one"`})
		must.NoError(t, err)
		return len(full[0].TaskStates) > 0, "no task states yet"
	})
	lean, _, err := c.Allocations().List(&nomadapi.QueryOptions{Filter: `JobID == "one"`, Params: map[string]string{"task_states": "false"}})
	must.NoError(t, err)
	must.Len(t, 1, lean)
	must.MapEmpty(t, lean[0].TaskStates)

	jobAllocs, _, err := c.Jobs().Allocations("one", false, &nomadapi.QueryOptions{Filter: `JobID == "none"`})
	must.NoError(t, err)
	must.Len(t, 0, jobAllocs)
	jobEvals, _, err := c.Jobs().Evaluations("one", &nomadapi.QueryOptions{Filter: `TriggeredBy == "job-register"`})
	must.NoError(t, err)
	must.Len(t, 1, jobEvals)

	nodes, _, err := c.Nodes().List(&nomadapi.QueryOptions{Filter: `Status == "ready"`})
	must.NoError(t, err)
	must.Len(t, 1, nodes)
	nodes, _, err = c.Nodes().List(&nomadapi.QueryOptions{Filter: `Status == "down"`})
	must.NoError(t, err)
	must.Len(t, 0, nodes)

	_, err = c.Namespaces().Register(&nomadapi.Namespace{Name: "apps"}, nil)
	must.NoError(t, err)
	nss, meta, err := c.Namespaces().List(&nomadapi.QueryOptions{PerPage: 1})
	must.NoError(t, err)
	must.Len(t, 1, nss)
	must.Eq(t, "apps", nss[0].Name)
	must.Eq(t, "default", meta.NextToken)
}

// A filter that does not parse, a per_page that is not a number and an
// unknown eval status are 400s naming what was wrong, never a full list.
func TestHTTP_ListSemantics_BadInput(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	c := officialClient(t, a)
	registerJobs(t, c, "web")

	_, _, err := c.Jobs().List(&nomadapi.QueryOptions{Filter: `ID ==`})
	code, body := statusOf(t, err)
	must.Eq(t, http.StatusBadRequest, code)
	must.StrContains(t, body, "filter expression")

	_, _, err = c.Jobs().List(&nomadapi.QueryOptions{Filter: `NoSuchField == "x"`})
	code, body = statusOf(t, err)
	must.Eq(t, http.StatusBadRequest, code)
	must.StrContains(t, body, "filter")

	for _, tc := range []struct{ path, want string }{
		{"/v1/nodes?per_page=many", "per_page"},
		{"/v1/evaluations?next_token=garbage", "next_token"},
		{"/v1/allocations?reverse=sideways", "reverse"},
		{"/v1/allocations?task_states=none", "task_states"},
		{"/v1/evaluations?filter_eval_status=done", "filter_eval_status"},
		{"/v1/acl/policies?filter=%3D%3D", "filter expression"},
		{"/v1/namespaces?filter=%3D%3D", "filter expression"},
		{"/v1/deployments?filter=%3D%3D", "filter expression"},
		{"/v1/deployments?per_page=many", "per_page"},
		{"/v1/deployment/allocations/x?filter=%3D%3D", "filter expression"},
		{"/v1/job/web/deployments?filter=%3D%3D", "filter expression"},
		{"/v1/node/pools?filter=%3D%3D", "filter expression"},
		{"/v1/node/pools?filter=NoSuchField%3D%3D%22x%22", "failed to apply filter"},
		{"/v1/node/pool/default/jobs?filter=%3D%3D", "filter expression"},
		{"/v1/node/pool/default/nodes?filter=%3D%3D", "filter expression"},
		{"/v1/node/pool/default/site-outages?filter=%3D%3D", "filter expression"},
		{"/v1/node/x/allocations?filter=%3D%3D", "filter expression"},
		{"/v1/job/web/allocations?filter=%3D%3D", "filter expression"},
		{"/v1/job/web/evaluations?filter=%3D%3D", "filter expression"},
		{"/v1/evaluation/x/allocations?filter=%3D%3D", "filter expression"},
		{"/v1/acl/tokens?filter=%3D%3D", "filter expression"},
		{"/v1/job/web?eval_priority=high", "eval_priority"},
	} {
		method := http.MethodGet
		if tc.want == "eval_priority" {
			method = http.MethodDelete
		}
		req, err := http.NewRequest(method, a.HTTPAddr+tc.path, nil)
		must.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		must.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		must.Eq(t, http.StatusBadRequest, resp.StatusCode, must.Sprint(tc.path))
		must.StrContains(t, string(b), tc.want, must.Sprint(tc.path))
	}
}

// eval_priority on register and deregister sets the priority of the
// evaluation created, not the job's.
func TestHTTP_EvalPriority(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	c := officialClient(t, a)
	job := mockJob("urgent", "mock_driver", map[string]any{"run_for": "5m"})
	resp, _, err := c.Jobs().RegisterOpts(job, &nomadapi.RegisterOptions{EvalPriority: 90}, nil)
	must.NoError(t, err)
	eval, _, err := c.Evaluations().Info(resp.EvalID, nil)
	must.NoError(t, err)
	must.Eq(t, 90, eval.Priority)
	stored, _, err := c.Jobs().Info("urgent", nil)
	must.NoError(t, err)
	must.Eq(t, 50, *stored.Priority)

	evalID, _, err := c.Jobs().DeregisterOpts("urgent", &nomadapi.DeregisterOptions{EvalPriority: 75}, nil)
	must.NoError(t, err)
	eval, _, err = c.Evaluations().Info(evalID, nil)
	must.NoError(t, err)
	must.Eq(t, 75, eval.Priority)

	_, _, err = c.Jobs().RegisterOpts(job, &nomadapi.RegisterOptions{EvalPriority: 500}, nil)
	code, body := statusOf(t, err)
	must.Eq(t, http.StatusBadRequest, code)
	must.StrContains(t, body, "eval priority")
}

// Deployments and node pools (and a pool's jobs and nodes) take the same
// filter and pagination as every other list, through the official
// client, as upstream's do: they used to answer every entry whatever the
// parameters.
func TestHTTP_ListSemantics_DeploymentsAndNodePools(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	c := officialClient(t, a)
	registerJobs(t, c, "dep-a", "dep-b", "dep-c")

	var deps []*nomadapi.Deployment
	wait.Poll(t, 10e9, "three deployments", func() (bool, string) {
		var err error
		deps, _, err = c.Deployments().List(nil)
		must.NoError(t, err)
		return len(deps) == 3, fmt.Sprint(len(deps), " deployments")
	})
	got, _, err := c.Deployments().List(&nomadapi.QueryOptions{Filter: `JobID == "dep-b"`})
	must.NoError(t, err)
	must.Len(t, 1, got)
	must.Eq(t, "dep-b", got[0].JobID)
	page1, meta, err := c.Deployments().List(&nomadapi.QueryOptions{PerPage: 2})
	must.NoError(t, err)
	must.Len(t, 2, page1)
	must.NotEq(t, "", meta.NextToken)
	page2, meta, err := c.Deployments().List(&nomadapi.QueryOptions{PerPage: 2, NextToken: meta.NextToken})
	must.NoError(t, err)
	must.Len(t, 1, page2)
	must.Eq(t, "", meta.NextToken)
	seen := map[string]bool{}
	for _, d := range append(page1, page2...) {
		seen[d.ID] = true
	}
	must.MapLen(t, 3, seen, must.Sprint("the two pages hold every deployment once"))

	_, err = c.NodePools().Register(&nomadapi.NodePool{Name: "edge"}, nil)
	must.NoError(t, err)
	pools, meta, err := c.NodePools().List(&nomadapi.QueryOptions{PerPage: 2})
	must.NoError(t, err)
	must.Eq(t, []string{"all", "default"}, []string{pools[0].Name, pools[1].Name})
	must.Eq(t, "edge", meta.NextToken)
	pools, _, err = c.NodePools().List(&nomadapi.QueryOptions{Filter: `Name == "edge"`})
	must.NoError(t, err)
	must.Len(t, 1, pools)
	must.Eq(t, "edge", pools[0].Name)

	jobs, _, err := c.NodePools().ListJobs("default", &nomadapi.QueryOptions{Filter: `ID != "dep-a"`})
	must.NoError(t, err)
	must.Eq(t, []string{"dep-b", "dep-c"}, jobIDs(jobs))
	jobs, meta, err = c.NodePools().ListJobs("default", &nomadapi.QueryOptions{PerPage: 1})
	must.NoError(t, err)
	must.Eq(t, []string{"dep-a"}, jobIDs(jobs))
	must.Eq(t, "dep-b", meta.NextToken)
	nodes, _, err := c.NodePools().ListNodes("all", &nomadapi.QueryOptions{Filter: `Status == "down"`})
	must.NoError(t, err)
	must.Len(t, 0, nodes)
	nodes, _, err = c.NodePools().ListNodes("all", &nomadapi.QueryOptions{Filter: `Status == "ready"`})
	must.NoError(t, err)
	must.Len(t, 1, nodes)
}

// A list whose table was never written answers X-Nomad-Index: 0, as
// upstream's (observed on Nomad 1.6.5: jobs, allocations, evaluations and
// deployments 0; namespaces and node pools 1, seeded with the cluster);
// harnesses compare it. (The client's own allocation watch still blocks:
// TestBlockingRPC_IndexZeroButClientAllocsBlock.)
func TestHTTP_EmptyListIndexZero(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	c := officialClient(t, a)

	for path, want := range map[string]string{
		"/v1/jobs": "0", "/v1/allocations": "0", "/v1/evaluations": "0", "/v1/deployments": "0",
		"/v1/namespaces": "1", "/v1/node/pools": "1",
	} {
		resp, err := http.Get(a.HTTPAddr + path)
		must.NoError(t, err)
		resp.Body.Close()
		must.Eq(t, http.StatusOK, resp.StatusCode)
		must.Eq(t, want, resp.Header.Get("X-Nomad-Index"), must.Sprint(path))
	}
	jobs, qm, err := c.Jobs().List(nil)
	must.NoError(t, err)
	must.Len(t, 0, jobs)
	must.Eq(t, uint64(0), qm.LastIndex)
}
