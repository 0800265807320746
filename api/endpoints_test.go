package api_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/api"
)

// Every endpoint must hit upstream's method and path, because our agent's
// router and the official client both assume them.
func TestEndpoints_MethodsAndPaths(t *testing.T) {
	type call func(c *api.Client) error
	cases := []struct {
		name   string
		resp   string
		call   call
		method string
		path   string
		query  url.Values
	}{
		{"jobs list", `[]`, func(c *api.Client) error { _, _, err := c.Jobs().List(nil); return err },
			http.MethodGet, "/v1/jobs", url.Values{}},
		{"jobs register", `{}`, func(c *api.Client) error { _, _, err := c.Jobs().Register(&api.Job{ID: new("web")}, nil); return err },
			http.MethodPut, "/v1/jobs", url.Values{}},
		{"job info", `{}`, func(c *api.Client) error { _, _, err := c.Jobs().Info("web", nil); return err },
			http.MethodGet, "/v1/job/web", url.Values{}},
		{"job info escapes child IDs", `{}`, func(c *api.Client) error { _, _, err := c.Jobs().Info("batch/periodic-1700000000", nil); return err },
			http.MethodGet, "/v1/job/batch%2Fperiodic-1700000000", url.Values{}},
		{"job allocations", `[]`, func(c *api.Client) error { _, _, err := c.Jobs().Allocations("web", true, nil); return err },
			http.MethodGet, "/v1/job/web/allocations", url.Values{"all": {"true"}}},
		{"job evaluations", `[]`, func(c *api.Client) error { _, _, err := c.Jobs().Evaluations("web", nil); return err },
			http.MethodGet, "/v1/job/web/evaluations", url.Values{}},
		{"job summary", `{}`, func(c *api.Client) error { _, _, err := c.Jobs().Summary("web", nil); return err },
			http.MethodGet, "/v1/job/web/summary", url.Values{}},
		{"job deregister purge", `{}`, func(c *api.Client) error {
			_, _, err := c.Jobs().Deregister("web", true, &api.WriteOptions{Namespace: "edge"})
			return err
		}, http.MethodDelete, "/v1/job/web", url.Values{"purge": {"true"}, "namespace": {"edge"}}},
		{"job deregister", `{}`, func(c *api.Client) error { _, _, err := c.Jobs().Deregister("web", false, nil); return err },
			http.MethodDelete, "/v1/job/web", url.Values{"purge": {"false"}}},
		{"alloc stop", `{"EvalID":"e1"}`, func(c *api.Client) error {
			_, err := c.Allocations().Stop(&api.Allocation{ID: "a1"}, &api.QueryOptions{Namespace: "edge", Params: map[string]string{"no_shutdown_delay": "true"}})
			return err
		}, http.MethodPut, "/v1/allocation/a1/stop", url.Values{"namespace": {"edge"}, "no_shutdown_delay": {"true"}}},
		{"system gc", ``, func(c *api.Client) error { return c.System().GarbageCollect() },
			http.MethodPut, "/v1/system/gc", url.Values{}},
		{"jobs parse", `{}`, func(c *api.Client) error { _, err := c.Jobs().ParseHCL(`job "x" {}`, true); return err },
			http.MethodPost, "/v1/jobs/parse", url.Values{}},
		{"job validate", `{}`, func(c *api.Client) error { _, _, err := c.Jobs().Validate(&api.Job{}, nil); return err },
			http.MethodPost, "/v1/validate/job", url.Values{}},
		{"allocs list", `[]`, func(c *api.Client) error {
			_, _, err := c.Allocations().List(&api.QueryOptions{Prefix: "ab12"})
			return err
		}, http.MethodGet, "/v1/allocations", url.Values{"prefix": {"ab12"}}},
		{"alloc info", `{}`, func(c *api.Client) error { _, _, err := c.Allocations().Info("ab12", nil); return err },
			http.MethodGet, "/v1/allocation/ab12", url.Values{}},
		{"nodes list", `[]`, func(c *api.Client) error { _, _, err := c.Nodes().List(nil); return err },
			http.MethodGet, "/v1/nodes", url.Values{}},
		{"node info", `{}`, func(c *api.Client) error { _, _, err := c.Nodes().Info("n1", nil); return err },
			http.MethodGet, "/v1/node/n1", url.Values{}},
		{"node allocations", `[]`, func(c *api.Client) error { _, _, err := c.Nodes().Allocations("n1", nil); return err },
			http.MethodGet, "/v1/node/n1/allocations", url.Values{}},
		{"node drain", `{}`, func(c *api.Client) error {
			_, err := c.Nodes().UpdateDrain("n1", &api.DrainSpec{Deadline: 1}, false, nil)
			return err
		}, http.MethodPut, "/v1/node/n1/drain", url.Values{}},
		{"node eligibility", `{}`, func(c *api.Client) error { _, err := c.Nodes().ToggleEligibility("n1", true, nil); return err },
			http.MethodPut, "/v1/node/n1/eligibility", url.Values{}},
		{"node purge", `{}`, func(c *api.Client) error { _, err := c.Nodes().Purge("n1", nil); return err },
			http.MethodPut, "/v1/node/n1/purge", url.Values{}},
		{"agent self", `{}`, func(c *api.Client) error { _, err := c.Agent().Self(); return err },
			http.MethodGet, "/v1/agent/self", url.Values{}},
		{"evals list", `[]`, func(c *api.Client) error { _, _, err := c.Evaluations().List(nil); return err },
			http.MethodGet, "/v1/evaluations", url.Values{}},
		{"eval info", `{}`, func(c *api.Client) error { _, _, err := c.Evaluations().Info("e1", nil); return err },
			http.MethodGet, "/v1/evaluation/e1", url.Values{}},
		{"eval allocations", `[]`, func(c *api.Client) error { _, _, err := c.Evaluations().Allocations("e1", nil); return err },
			http.MethodGet, "/v1/evaluation/e1/allocations", url.Values{}},
		{"status leader", `""`, func(c *api.Client) error { _, err := c.Status().Leader(); return err },
			http.MethodGet, "/v1/status/leader", url.Values{}},
		{"status peers", `[]`, func(c *api.Client) error { _, err := c.Status().Peers(); return err },
			http.MethodGet, "/v1/status/peers", url.Values{}},
		{"agent members", `{}`, func(c *api.Client) error { _, err := c.Agent().Members(); return err },
			http.MethodGet, "/v1/agent/members", url.Values{}},
		{"agent servers", `[]`, func(c *api.Client) error { _, err := c.Agent().Servers(); return err },
			http.MethodGet, "/v1/agent/servers", url.Values{}},
		{"agent join", `{"num_joined":2}`, func(c *api.Client) error { _, err := c.Agent().Join("10.0.0.1", "10.0.0.2:4648"); return err },
			http.MethodPut, "/v1/agent/join", url.Values{"address": {"10.0.0.1", "10.0.0.2:4648"}}},
		{"agent force-leave", ``, func(c *api.Client) error { return c.Agent().ForceLeave("s3.global") },
			http.MethodPut, "/v1/agent/force-leave", url.Values{"node": {"s3.global"}}},
		{"raft configuration stale", `{}`, func(c *api.Client) error {
			_, err := c.Operator().RaftGetConfiguration(&api.QueryOptions{AllowStale: true})
			return err
		}, http.MethodGet, "/v1/operator/raft/configuration", url.Values{"stale": {""}}},
		{"raft remove peer by id", ``, func(c *api.Client) error { return c.Operator().RaftRemovePeerByID("id-1", nil) },
			http.MethodDelete, "/v1/operator/raft/peer", url.Values{"id": {"id-1"}}},
		{"raft remove peer by address", ``, func(c *api.Client) error { return c.Operator().RaftRemovePeerByAddress("10.0.0.3:4647", nil) },
			http.MethodDelete, "/v1/operator/raft/peer", url.Values{"address": {"10.0.0.3:4647"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, c := newFakeAgent(t, 200, tc.resp, nil)
			must.NoError(t, tc.call(c))
			r := f.last(t)
			must.Eq(t, tc.method, r.Method)
			must.Eq(t, tc.path, r.RawPath)
			must.Eq(t, tc.query, r.Query)
		})
	}
}

// The register body is {"Job": {...}} with upstream field names, and the
// write index comes back from X-Nomad-Index.
func TestJobs_RegisterBodyAndResponse(t *testing.T) {
	f, c := newFakeAgent(t, 200,
		`{"EvalID":"e-1","EvalCreateIndex":41,"JobModifyIndex":40,"Warnings":"w"}`,
		map[string]string{api.HeaderIndex: "41"})

	job := api.NewServiceJob("web", "web", "global", 50)
	job.AddTaskGroup(api.NewTaskGroup("app", 3))
	resp, wm, err := c.Jobs().RegisterOpts(job,
		&api.RegisterOptions{EnforceIndex: true, ModifyIndex: 7},
		&api.WriteOptions{Namespace: "edge"})
	must.NoError(t, err)
	must.Eq(t, &api.JobRegisterResponse{EvalID: "e-1", EvalCreateIndex: 41, JobModifyIndex: 40, Warnings: "w"}, resp)
	must.Eq(t, uint64(41), wm.LastIndex)

	r := f.last(t)
	must.Eq(t, "application/json", r.Header.Get("Content-Type"))
	must.Eq(t, "edge", r.Query.Get("namespace"))
	var body map[string]json.RawMessage
	must.NoError(t, json.Unmarshal([]byte(r.Body), &body))
	var sent api.Job
	must.NoError(t, json.Unmarshal(body["Job"], &sent))
	must.Eq(t, "web", *sent.ID)
	must.Eq(t, 3, *sent.TaskGroups[0].Count)
	must.Eq(t, `true`, string(body["EnforceIndex"]))
	must.Eq(t, `7`, string(body["JobModifyIndex"]))
	must.Eq(t, `"edge"`, string(body["Namespace"]))
}

// Deregister returns the eval ID; parse and validate send the upstream
// request shapes.
func TestJobs_DeregisterParseValidateBodies(t *testing.T) {
	_, c := newFakeAgent(t, 200, `{"EvalID":"e-9","EvalCreateIndex":5,"JobModifyIndex":5}`, map[string]string{api.HeaderIndex: "5"})
	evalID, wm, err := c.Jobs().Deregister("web", true, nil)
	must.NoError(t, err)
	must.Eq(t, "e-9", evalID)
	must.Eq(t, uint64(5), wm.LastIndex)

	f, c := newFakeAgent(t, 200, `{"ID":"x","Name":"x"}`, nil)
	job, err := c.Jobs().ParseHCL(`job "x" {}`, true)
	must.NoError(t, err)
	must.Eq(t, "x", *job.ID)
	must.Eq(t, `{"JobHCL":"job \"x\" {}","Variables":"","Canonicalize":true}`, f.last(t).Body)

	f, c = newFakeAgent(t, 200, `{"ValidationErrors":["a","b"],"Error":"2 errors","Warnings":""}`, nil)
	vr, _, err := c.Jobs().Validate(&api.Job{ID: new("x")}, nil)
	must.NoError(t, err)
	must.Eq(t, []string{"a", "b"}, vr.ValidationErrors)
	must.Eq(t, "2 errors", vr.Error)
	var body map[string]json.RawMessage
	must.NoError(t, json.Unmarshal([]byte(f.last(t).Body), &body))
	must.MapContainsKey(t, body, "Job")
}

// Listings come back in the order the CLI prints them: jobs by ID,
// everything else newest first, whatever order the agent used.
func TestLists_Sorted(t *testing.T) {
	_, c := newFakeAgent(t, 200, `[{"ID":"b"},{"ID":"a"},{"ID":"c"}]`, nil)
	jobs, _, err := c.Jobs().List(nil)
	must.NoError(t, err)
	must.Eq(t, []string{"a", "b", "c"}, []string{jobs[0].ID, jobs[1].ID, jobs[2].ID})

	_, c = newFakeAgent(t, 200, `[{"ID":"old","CreateIndex":1},{"ID":"new","CreateIndex":9},{"ID":"mid","CreateIndex":5}]`, nil)
	allocs, _, err := c.Allocations().List(nil)
	must.NoError(t, err)
	must.Eq(t, []string{"new", "mid", "old"}, []string{allocs[0].ID, allocs[1].ID, allocs[2].ID})
	evals, _, err := c.Evaluations().List(nil)
	must.NoError(t, err)
	must.Eq(t, []string{"new", "mid", "old"}, []string{evals[0].ID, evals[1].ID, evals[2].ID})
	nodes, _, err := c.Nodes().List(nil)
	must.NoError(t, err)
	must.Eq(t, []string{"new", "mid", "old"}, []string{nodes[0].ID, nodes[1].ID, nodes[2].ID})
}

// Allocation decoding must keep what the disconnect logic and `alloc
// status` read: AllocStates, the unknown status, score metadata and task
// events.
func TestAllocations_InfoDecodes(t *testing.T) {
	_, c := newFakeAgent(t, 200, `{
		"ID": "a1", "ClientStatus": "unknown", "DesiredStatus": "run",
		"AllocStates": [{"Field": 0, "Value": "unknown", "Time": "2026-01-02T03:04:05Z"}],
		"Metrics": {"ScoreMetaData": [{"NodeID": "n1", "Scores": {"binpack": 0.5}, "NormScore": 0.75}]},
		"TaskStates": {"web": {"State": "running", "Restarts": 2,
			"Events": [{"Type": "Reconnected", "Time": 42, "DisplayMessage": "Client reconnected"}]}},
		"AllocatedResources": {"Tasks": {"web": {"Cpu": {"CpuShares": 100}, "Memory": {"MemoryMB": 300}}}, "Shared": {"DiskMB": 300}}
	}`, map[string]string{api.HeaderIndex: "77"})
	a, qm, err := c.Allocations().Info("a1", nil)
	must.NoError(t, err)
	must.Eq(t, uint64(77), qm.LastIndex)
	must.Eq(t, api.AllocClientStatusUnknown, a.ClientStatus)
	must.False(t, a.ClientTerminalStatus())
	must.False(t, a.ServerTerminalStatus())
	must.Len(t, 1, a.AllocStates)
	must.Eq(t, api.AllocStateFieldClientStatus, a.AllocStates[0].Field)
	must.Eq(t, "unknown", a.AllocStates[0].Value)
	must.Eq(t, 0.75, a.Metrics.ScoreMetaData[0].NormScore)
	must.Eq(t, uint64(2), a.TaskStates["web"].Restarts)
	must.Eq(t, api.TaskClientReconnected, a.TaskStates["web"].Events[0].Type)
	must.Eq(t, int64(100), a.AllocatedResources.Tasks["web"].Cpu.CpuShares)
	must.Eq(t, int64(300), a.AllocatedResources.Shared.DiskMB)
}

// Unknown is the one non-terminal status that looks terminal to a naive
// reader; pin every status's answer.
func TestAllocation_TerminalStatus(t *testing.T) {
	terminal := map[string]bool{
		api.AllocClientStatusPending:  false,
		api.AllocClientStatusRunning:  false,
		api.AllocClientStatusUnknown:  false,
		api.AllocClientStatusComplete: true,
		api.AllocClientStatusFailed:   true,
		api.AllocClientStatusLost:     true,
	}
	for status, want := range terminal {
		a := &api.Allocation{ClientStatus: status}
		must.Eq(t, want, a.ClientTerminalStatus(), must.Sprint(status))
	}
	for status, want := range map[string]bool{
		api.AllocDesiredStatusRun: false, api.AllocDesiredStatusStop: true, api.AllocDesiredStatusEvict: true,
	} {
		a := &api.Allocation{DesiredStatus: status}
		must.Eq(t, want, a.ServerTerminalStatus(), must.Sprint(status))
	}
}

// A join that reached some servers but not all reports both: the count,
// and the agent's reason as the error.
func TestAgent_JoinPartialFailure(t *testing.T) {
	_, c := newFakeAgent(t, 200, `{"num_joined":1,"error":"10.0.0.2: connection refused"}`, nil)
	n, err := c.Agent().Join("10.0.0.1", "10.0.0.2")
	must.Eq(t, 1, n)
	must.ErrorContains(t, err, "connection refused")
}
