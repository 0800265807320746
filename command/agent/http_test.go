package agent_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nomad-edge/nomad/testutil/wait"

	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

func officialClient(t *testing.T, a *agenttest.Agent) *nomadapi.Client {
	t.Helper()
	c, err := nomadapi.NewClient(&nomadapi.Config{Address: a.HTTPAddr})
	must.NoError(t, err)
	return c
}

// mockJob is a one-task service job built with the official client's
// constructors, the way integrators build jobs.
func mockJob(id, driver string, config map[string]any) *nomadapi.Job {
	task := nomadapi.NewTask("web", driver)
	for k, v := range config {
		task.SetConfig(k, v)
	}
	task.Require(&nomadapi.Resources{CPU: new(100), MemoryMB: new(64)})
	group := nomadapi.NewTaskGroup("web", 1).AddTask(task)
	return nomadapi.NewServiceJob(id, id, "global", 50).AddTaskGroup(group)
}

// statusOf extracts the HTTP status the official client saw.
func statusOf(t *testing.T, err error) (int, string) {
	t.Helper()
	var ure nomadapi.UnexpectedResponseError
	if !errors.As(err, &ure) {
		t.Fatalf("expected an UnexpectedResponseError, got %T: %v", err, err)
	}
	return ure.StatusCode(), ure.Body()
}

// The official Go client must be able to drive our agent end to end:
// that is the compatibility promise to integrators (DESIGN.md). This
// registers a job, reads it back, lists its allocations and the nodes,
// and checks that a blocking query returns when an allocation changes.
func TestHTTP_OfficialClientCompat(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	c := officialClient(t, a)

	leader, err := c.Status().Leader()
	must.NoError(t, err)
	must.Eq(t, a.Server().RPCAddr().String(), leader)
	regions, err := c.Regions().List()
	must.NoError(t, err)
	must.Eq(t, []string{"global"}, regions)

	job := mockJob("compat", "mock_driver", map[string]any{"run_for": "5m"})
	resp, wm, err := c.Jobs().Register(job, nil)
	must.NoError(t, err)
	must.UUIDv4(t, resp.EvalID)
	must.Positive(t, wm.LastIndex)
	must.Eq(t, wm.LastIndex, resp.JobModifyIndex)

	got, qm, err := c.Jobs().Info("compat", nil)
	must.NoError(t, err)
	must.True(t, qm.KnownLeader)
	must.Positive(t, qm.LastIndex)
	must.Eq(t, "compat", *got.ID)
	must.Eq(t, "default", *got.Namespace)
	must.Eq(t, "service", *got.Type)
	must.Eq(t, 1, *got.TaskGroups[0].Count)
	must.Eq(t, "5m", got.TaskGroups[0].Tasks[0].Config["run_for"])
	must.Eq(t, 64, *got.TaskGroups[0].Tasks[0].Resources.MemoryMB)

	// The blocking-query headers are upstream's, on every read.
	hresp, err := http.Get(a.HTTPAddr + "/v1/jobs")
	must.NoError(t, err)
	hresp.Body.Close()
	must.Eq(t, "application/json", hresp.Header.Get("Content-Type"))
	must.NotEq(t, "", hresp.Header.Get("X-Nomad-Index"))
	must.Eq(t, "true", hresp.Header.Get("X-Nomad-KnownLeader"))
	must.NotEq(t, "", hresp.Header.Get("X-Nomad-LastContact"))

	jobs, _, err := c.Jobs().List(&nomadapi.QueryOptions{Prefix: "comp"})
	must.NoError(t, err)
	must.SliceLen(t, 1, jobs)
	must.Eq(t, "compat", jobs[0].ID)

	nodes, _, err := c.Nodes().List(nil)
	must.NoError(t, err)
	must.SliceLen(t, 1, nodes)
	must.Eq(t, "ready", nodes[0].Status)
	must.MapContainsKey(t, nodes[0].Drivers, "mock_driver")
	node, _, err := c.Nodes().Info(nodes[0].ID, nil)
	must.NoError(t, err)
	must.Eq(t, nodes[0].ID, node.ID)
	must.Eq(t, "dc1", node.Datacenter)

	// Wait for the allocation to run, following it with blocking queries
	// as integrators do.
	var allocs []*nomadapi.AllocationListStub
	var index uint64
	deadline := time.Now().Add(30 * time.Second)
	for {
		allocs, qm, err = c.Jobs().Allocations("compat", false, &nomadapi.QueryOptions{WaitIndex: index, WaitTime: 5 * time.Second})
		must.NoError(t, err)
		index = qm.LastIndex
		if len(allocs) == 1 && allocs[0].ClientStatus == "running" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("allocation not running after 30s; last saw %s", describeStubs(allocs))
		}
	}
	alloc, _, err := c.Allocations().Info(allocs[0].ID, nil)
	must.NoError(t, err)
	must.Eq(t, node.ID, alloc.NodeID)
	must.Eq(t, "compat", alloc.JobID)
	must.Eq(t, "run", alloc.DesiredStatus)
	must.MapContainsKey(t, alloc.TaskStates, "web")
	must.Eq(t, "running", alloc.TaskStates["web"].State)
	must.NotNil(t, alloc.Metrics)

	nodeAllocs, _, err := c.Nodes().Allocations(node.ID, nil)
	must.NoError(t, err)
	must.SliceLen(t, 1, nodeAllocs)

	eval, _, err := c.Evaluations().Info(resp.EvalID, nil)
	must.NoError(t, err)
	must.Eq(t, "complete", eval.Status)
	must.Eq(t, "job-register", eval.TriggeredBy)
	evalAllocs, _, err := c.Evaluations().Allocations(resp.EvalID, nil)
	must.NoError(t, err)
	must.SliceLen(t, 1, evalAllocs)

	summary, _, err := c.Jobs().Summary("compat", nil)
	must.NoError(t, err)
	must.Eq(t, 1, summary.Summary["web"].Running)

	// Nothing changes the allocation now: a blocking query waits out its
	// wait time and answers with the same index.
	start := time.Now()
	_, qm, err = c.Jobs().Allocations("compat", false, &nomadapi.QueryOptions{WaitIndex: index, WaitTime: 300 * time.Millisecond})
	must.NoError(t, err)
	must.GreaterEq(t, 300*time.Millisecond, time.Since(start))
	must.Eq(t, index, qm.LastIndex)

	// A blocking query returns as soon as an allocation changes: stopping
	// the job marks the allocation for stop.
	type result struct {
		allocs []*nomadapi.AllocationListStub
		meta   *nomadapi.QueryMeta
		err    error
	}
	done := make(chan result, 1)
	go func() {
		allocs, meta, err := c.Jobs().Allocations("compat", false, &nomadapi.QueryOptions{WaitIndex: index, WaitTime: time.Minute})
		done <- result{allocs, meta, err}
	}()
	_, _, err = c.Jobs().Deregister("compat", false, nil)
	must.NoError(t, err)
	select {
	case r := <-done:
		must.NoError(t, r.err)
		must.Greater(t, index, r.meta.LastIndex)
		must.SliceLen(t, 1, r.allocs)
		must.Eq(t, "stop", r.allocs[0].DesiredStatus, must.Sprintf("allocs: %s", describeStubs(r.allocs)))
	case <-time.After(30 * time.Second):
		t.Fatal("blocking query on the job's allocations did not return within 30s of the job being stopped")
	}
}

// The official client's alloc stop reaches our endpoint and answers with
// the evaluation, which stops and replaces the allocation.
func TestHTTP_OfficialClientAllocStop(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	c := officialClient(t, a)
	_, _, err := c.Jobs().Register(mockJob("stopper", "mock_driver", map[string]any{"run_for": "5m"}), nil)
	must.NoError(t, err)
	var allocs []*nomadapi.AllocationListStub
	wait.Poll(t, 30*time.Second, "the allocation placed", func() (bool, string) {
		allocs, _, err = c.Jobs().Allocations("stopper", false, nil)
		return err == nil && len(allocs) == 1, describeStubs(allocs)
	})
	// The official client reads the scale status our way too.
	wait.Poll(t, 30*time.Second, "the allocation running in the scale status", func() (bool, string) {
		st, _, err := c.Jobs().ScaleStatus("stopper", nil)
		if err != nil {
			return false, err.Error()
		}
		g := st.TaskGroups["web"]
		return g.Desired == 1 && g.Placed == 1 && g.Running == 1, fmt.Sprintf("%+v", g)
	})
	resp, err := c.Allocations().Stop(&nomadapi.Allocation{ID: allocs[0].ID}, nil)
	must.NoError(t, err)
	must.UUIDv4(t, resp.EvalID)
	must.Positive(t, resp.LastIndex)
	wait.Poll(t, 30*time.Second, "the allocation stopped and replaced", func() (bool, string) {
		allocs, _, err = c.Jobs().Allocations("stopper", false, nil)
		if err != nil || len(allocs) != 2 {
			return false, describeStubs(allocs)
		}
		stopped := 0
		for _, al := range allocs {
			if al.DesiredStatus == "stop" {
				stopped++
			}
		}
		return stopped == 1, describeStubs(allocs)
	})
}

func describeStubs(allocs []*nomadapi.AllocationListStub) string {
	if len(allocs) == 0 {
		return "no allocations"
	}
	var parts []string
	for _, a := range allocs {
		parts = append(parts, fmt.Sprintf("%s desired=%s client=%s", a.ID[:8], a.DesiredStatus, a.ClientStatus))
	}
	return strings.Join(parts, "; ")
}

// rawRequest sends body to path and returns the status and body.
func rawRequest(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	must.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	must.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must.NoError(t, err)
	return resp.StatusCode, string(b)
}

// Bad input is refused with a 400 that names the problem, and nothing is
// registered; unknown objects are 404s. Integrators branch on these codes.
func TestHTTP_BadInput(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	c := officialClient(t, a)

	code, body := rawRequest(t, http.MethodPut, a.HTTPAddr+"/v1/jobs", `{"Job": {"ID": "x",`)
	must.Eq(t, http.StatusBadRequest, code)
	must.StrContains(t, body, "malformed JSON")

	code, body = rawRequest(t, http.MethodPut, a.HTTPAddr+"/v1/jobs",
		`{"Job": {"ID": "x", "TaskGroups": [{"Name": "g", "Consul": {"Namespace": "d"}}]}}`)
	must.Eq(t, http.StatusBadRequest, code)
	must.StrContains(t, body, `unknown field "Job.TaskGroups[0].Consul"`)

	neg := mockJob("negative", "mock_driver", nil)
	neg.TaskGroups[0].Count = new(-1)
	_, _, err := c.Jobs().Register(neg, nil)
	must.Error(t, err)
	status, msg := statusOf(t, err)
	must.Eq(t, http.StatusBadRequest, status)
	must.StrContains(t, msg, "count can't be negative")

	jobs, _, err := c.Jobs().List(nil)
	must.NoError(t, err)
	must.SliceEmpty(t, jobs, must.Sprint("a rejected job must not be registered"))

	_, _, err = c.Jobs().Info("no-such-job", nil)
	must.Error(t, err)
	status, msg = statusOf(t, err)
	must.Eq(t, http.StatusNotFound, status)
	must.StrContains(t, msg, "job not found")

	for _, path := range []string{
		"/v1/allocation/9f1c2a44-0000-4000-8000-000000000000",
		"/v1/evaluation/9f1c2a44-0000-4000-8000-000000000000",
		"/v1/node/9f1c2a44-0000-4000-8000-000000000000",
		"/v1/job/no-such-job/summary",
	} {
		code, body := rawRequest(t, http.MethodGet, a.HTTPAddr+path, "")
		must.Eq(t, http.StatusNotFound, code, must.Sprint(path))
		must.StrContains(t, body, "not found", must.Sprint(path))
	}
	// Deregistering an unknown job is a success, as upstream's
	// (TestHTTP_DeregisterUnknownJob).
	code, _ = rawRequest(t, http.MethodDelete, a.HTTPAddr+"/v1/job/no-such-job", "")
	must.Eq(t, http.StatusOK, code)

	code, body = rawRequest(t, http.MethodGet, a.HTTPAddr+"/v1/jobs?index=soon", "")
	must.Eq(t, http.StatusBadRequest, code)
	must.StrContains(t, body, "Invalid index")
	code, body = rawRequest(t, http.MethodGet, a.HTTPAddr+"/v1/jobs?index=1&wait=forever", "")
	must.Eq(t, http.StatusBadRequest, code)
	must.StrContains(t, body, "Invalid wait time")
}

// A job asking for a driver no node has is accepted, and its evaluation
// explains why nothing was placed, so the operator can fix the job or the
// fleet.
func TestHTTP_PlacementFailureIsExplained(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	c := officialClient(t, a)

	resp, _, err := c.Jobs().Register(mockJob("needs-docker", "docker", nil), nil)
	must.NoError(t, err)

	var eval *nomadapi.Evaluation
	wait.Poll(t, 30*time.Second, "the evaluation to finish", func() (bool, string) {
		eval, _, err = c.Evaluations().Info(resp.EvalID, nil)
		if err != nil {
			return false, err.Error()
		}
		return eval.Status == "complete", "status " + eval.Status
	})
	must.MapContainsKey(t, eval.FailedTGAllocs, "web")
	metric := eval.FailedTGAllocs["web"]
	must.Eq(t, 1, metric.NodesEvaluated)
	must.Eq(t, map[string]int{"missing drivers": 1}, metric.ConstraintFiltered)
	must.NotEq(t, "", eval.BlockedEval, must.Sprint("the job must wait for capacity in a blocked evaluation"))

	summary, _, err := c.Jobs().Summary("needs-docker", nil)
	must.NoError(t, err)
	must.Eq(t, 1, summary.Summary["web"].Queued)
}

// The parse and validate endpoints serve tools without an HCL parser or
// with their own job builders.
func TestHTTP_ParseAndValidate(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	c := officialClient(t, a)

	job, err := c.Jobs().ParseHCL(`job "p" {
  group "g" {
    task "t" {
      driver = "mock_driver"
    }
  }
}`, true)
	must.NoError(t, err)
	must.Eq(t, "p", *job.ID)
	must.Eq(t, 1, *job.TaskGroups[0].Count)
	must.Eq(t, 300, *job.TaskGroups[0].Tasks[0].Resources.MemoryMB)

	_, err = c.Jobs().ParseHCL(`job "p" {
  group "g" {
    consul {}
  }
}`, false)
	must.Error(t, err)
	status, msg := statusOf(t, err)
	must.Eq(t, http.StatusBadRequest, status)
	must.StrContains(t, msg, "input.hcl:3:5")

	ok, _, err := c.Jobs().Validate(mockJob("v", "mock_driver", nil), nil)
	must.NoError(t, err)
	must.SliceEmpty(t, ok.ValidationErrors)

	bad := mockJob("v", "mock_driver", nil)
	bad.Priority = new(500)
	res, _, err := c.Jobs().Validate(bad, nil)
	must.NoError(t, err)
	must.SliceNotEmpty(t, res.ValidationErrors)
	must.StrContains(t, strings.Join(res.ValidationErrors, "\n"), "priority")
}

// /v1/agent/self tells the official client the agent's member name
// ("<node>.<region>", as upstream's), region and datacenter.
func TestHTTP_AgentSelf(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	c := officialClient(t, a)

	name, err := c.Agent().NodeName()
	must.NoError(t, err)
	must.Eq(t, a.Config().NodeName+".global", name)
	region, err := c.Agent().Region()
	must.NoError(t, err)
	must.Eq(t, "global", region)
	dc, err := c.Agent().Datacenter()
	must.NoError(t, err)
	must.Eq(t, "dc1", dc)

	code, body := rawRequest(t, http.MethodGet, a.HTTPAddr+"/v1/agent/health", "")
	must.Eq(t, http.StatusOK, code, must.Sprint(body))
}
