package agent_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/nomad-edge/nomad/testutil/wait"

	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// Deregistering a job that does not exist is a success with nothing
// written (no evaluation, index 0), as upstream: scripts and test
// harnesses stop jobs unconditionally in their cleanup, and a stop retried
// after a lost answer must not fail.
func TestHTTP_DeregisterUnknownJob(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	c := officialClient(t, a)

	for _, purge := range []bool{false, true} {
		evalID, wm, err := c.Jobs().Deregister("nosuch", purge, nil)
		must.NoError(t, err, must.Sprintf("purge=%v", purge))
		must.Eq(t, "", evalID)
		must.Eq(t, uint64(0), wm.LastIndex)
	}
	evals, _, err := c.Evaluations().List(nil)
	must.NoError(t, err)
	must.Len(t, 0, evals, must.Sprint("nothing to stop creates no evaluation"))
}

// Job IDs with "/", a tab or non-ASCII characters register, as upstream
// accepts them, and every /v1/job/:id/... route finds the job through the
// official client, which escapes the ID in the path. Only what upstream
// refuses is refused: a space, a NUL, each named.
func TestHTTP_JobIDsEscapedInPaths(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	c := officialClient(t, a)

	for _, id := range []string{"team/web", "tab\there", "日本-ジョブ", "q?x#y%z"} {
		t.Run(id, func(t *testing.T) {
			job := mockJob(id, "mock_driver", map[string]any{"run_for": "5m"})
			// No deployment: a scale during an active one is refused.
			job.Update = &nomadapi.UpdateStrategy{MaxParallel: new(0)}
			resp, _, err := c.Jobs().Register(job, nil)
			must.NoError(t, err)

			got, _, err := c.Jobs().Info(id, nil)
			must.NoError(t, err)
			must.Eq(t, id, *got.ID)
			wait.Poll(t, 10*time.Second, "the allocation", func() (bool, string) {
				allocs, _, err := c.Jobs().Allocations(id, false, nil)
				return err == nil && len(allocs) == 1, "error: " + errString(err)
			})
			evals, _, err := c.Jobs().Evaluations(id, nil)
			must.NoError(t, err)
			must.Eq(t, resp.EvalID, evals[len(evals)-1].ID)
			summary, _, err := c.Jobs().Summary(id, nil)
			must.NoError(t, err)
			must.Eq(t, id, summary.JobID)
			scale, _, err := c.Jobs().ScaleStatus(id, nil)
			must.NoError(t, err)
			must.Eq(t, id, scale.JobID)
			_, _, err = c.Jobs().Scale(id, "web", new(2), "more", false, nil, nil)
			must.NoError(t, err)
			versions, _, _, err := c.Jobs().Versions(id, false, nil)
			must.NoError(t, err)
			must.Len(t, 2, versions)
			_, _, err = c.Jobs().Stable(id, 0, true, nil)
			must.NoError(t, err)
			_, _, err = c.Jobs().Revert(id, 0, nil, nil, "", "")
			must.NoError(t, err)
			_, _, err = c.Jobs().Plan(job, true, nil)
			must.NoError(t, err)
			_, _, err = c.Jobs().Deployments(id, false, nil)
			must.NoError(t, err)
			_, _, err = c.Jobs().LatestDeployment(id, nil)
			must.NoError(t, err)
			// A PUT to /v1/job/:id with the escaped ID matches the body's.
			body, err := json.Marshal(map[string]any{"Job": job})
			must.NoError(t, err)
			req, err := http.NewRequest(http.MethodPut, a.HTTPAddr+"/v1/job/"+url.PathEscape(id), bytes.NewReader(body))
			must.NoError(t, err)
			hresp, err := http.DefaultClient.Do(req)
			must.NoError(t, err)
			msg, _ := io.ReadAll(hresp.Body)
			hresp.Body.Close()
			must.Eq(t, http.StatusOK, hresp.StatusCode, must.Sprint(string(msg)))

			evalID, _, err := c.Jobs().Deregister(id, true, nil)
			must.NoError(t, err)
			must.NotEq(t, "", evalID)
			_, _, err = c.Jobs().Info(id, nil)
			code, _ := statusOf(t, err)
			must.Eq(t, http.StatusNotFound, code)
		})
	}

	// Parameterized and periodic jobs launch children under escaped IDs.
	param := batchJob("batch/日本")
	param.ParameterizedJob = &nomadapi.ParameterizedJobConfig{Payload: "optional"}
	_, _, err := c.Jobs().Register(param, nil)
	must.NoError(t, err)
	disp, _, err := c.Jobs().Dispatch("batch/日本", nil, nil, "", nil)
	must.NoError(t, err)
	must.StrHasPrefix(t, "batch/日本/dispatch-", disp.DispatchedJobID)
	periodic := batchJob("cron/夜")
	periodic.Periodic = &nomadapi.PeriodicConfig{Specs: []string{"0 3 * * *"}}
	_, _, err = c.Jobs().Register(periodic, nil)
	must.NoError(t, err)
	_, _, err = c.Jobs().PeriodicForce("cron/夜", nil)
	must.NoError(t, err)

	for id, want := range map[string]string{"my job": `Job ID "my job" must not contain a space`, "a\x00b": "must not contain a NUL character"} {
		_, _, err := c.Jobs().Register(mockJob(id, "mock_driver", nil), nil)
		code, body := statusOf(t, err)
		must.Eq(t, http.StatusBadRequest, code)
		must.StrContains(t, body, want)
	}
}

// PreserveCounts on a registration keeps the count of every group the job
// already has (one an autoscaler or `job scale` changed), as upstream's
// `job run -preserve-counts`; a group new to the job takes its own count,
// and without the flag the file's count wins.
func TestHTTP_RegisterPreserveCounts(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	c := officialClient(t, a)

	job := mockJob("keep", "mock_driver", map[string]any{"run_for": "5m"})
	// No deployment: a scale during an active one is refused.
	job.Update = &nomadapi.UpdateStrategy{MaxParallel: new(0)}
	_, _, err := c.Jobs().Register(job, nil)
	must.NoError(t, err)
	_, _, err = c.Jobs().Scale("keep", "web", new(3), "by hand", false, nil, nil)
	must.NoError(t, err)

	extra := nomadapi.NewTaskGroup("extra", 2).AddTask(job.TaskGroups[0].Tasks[0])
	job.AddTaskGroup(extra)
	_, _, err = c.Jobs().RegisterOpts(job, &nomadapi.RegisterOptions{PreserveCounts: true}, nil)
	must.NoError(t, err)
	got, _, err := c.Jobs().Info("keep", nil)
	must.NoError(t, err)
	must.Eq(t, 3, *got.TaskGroups[0].Count, must.Sprint("the scaled count is kept"))
	must.Eq(t, 2, *got.TaskGroups[1].Count, must.Sprint("a new group takes its own"))

	_, _, err = c.Jobs().Register(job, nil)
	must.NoError(t, err)
	got, _, err = c.Jobs().Info("keep", nil)
	must.NoError(t, err)
	must.Eq(t, 1, *got.TaskGroups[0].Count, must.Sprint("without the flag the file's count wins"))
}

// /v1/jobs/parse knows upstream's hclv1 flag: false parses as always (HCL2),
// true is refused by name, as this version has no HCL1 parser; it used to
// be refused as an unknown field.
func TestHTTP_ParseHCLv1(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	src := "job \"p\" {\n  group \"g\" {\n    task \"t\" {\n      driver = \"mock_driver\"\n    }\n  }\n}\n"
	parse := func(hclv1 bool) (int, string) {
		b, err := json.Marshal(map[string]any{"JobHCL": src, "hclv1": hclv1})
		must.NoError(t, err)
		return rawRequest(t, http.MethodPut, a.HTTPAddr+"/v1/jobs/parse", string(b))
	}
	code, body := parse(false)
	must.Eq(t, http.StatusOK, code, must.Sprint(body))
	must.StrContains(t, body, `"ID":"p"`)
	code, body = parse(true)
	must.Eq(t, http.StatusBadRequest, code)
	must.StrContains(t, body, "hclv1 is not supported by this version")
}
