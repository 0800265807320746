package agent_test

import (
	"fmt"
	"testing"
	"time"

	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent/agenttest"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// The official Go client plans, scales, lists versions of, marks stable
// and reverts a job on our agent: the job lifecycle an integrator scripts.
func TestHTTP_OfficialClientJobLifecycle(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	c := officialClient(t, a)
	job := mockJob("life", "mock_driver", map[string]any{"run_for": "5m"})

	plan, _, err := c.Jobs().Plan(job, true, nil)
	must.NoError(t, err)
	must.Eq(t, 0, plan.JobModifyIndex)
	must.Eq(t, "Added", plan.Diff.Type)
	must.Eq(t, 1, plan.Annotations.DesiredTGUpdates["web"].Place)
	must.MapEmpty(t, plan.FailedTGAllocs)

	reg, _, err := c.Jobs().Register(job, nil)
	must.NoError(t, err)

	job.TaskGroups[0].Count = new(2)
	plan, _, err = c.Jobs().Plan(job, true, nil)
	must.NoError(t, err)
	must.Eq(t, reg.JobModifyIndex, plan.JobModifyIndex)
	must.Eq(t, "Edited", plan.Diff.Type)
	must.Eq(t, "Count", plan.Diff.TaskGroups[0].Fields[0].Name)

	// A registration against the index the plan saw goes through once.
	_, _, err = c.Jobs().EnforceRegister(job, plan.JobModifyIndex, nil)
	must.NoError(t, err)
	_, _, err = c.Jobs().EnforceRegister(job, plan.JobModifyIndex, nil)
	must.ErrorContains(t, err, "Enforcing job modify index")

	// The update's deployment is still running: a scale is refused in
	// upstream's words, unless it overrides. The deployment comes with
	// the update's evaluation, so wait for it rather than race it.
	wait.Poll(t, 30*time.Second, "version 1's deployment running", func() (bool, string) {
		d, _, err := c.Jobs().LatestDeployment("life", nil)
		must.NoError(t, err)
		if d == nil {
			return false, "no deployment"
		}
		return d.JobVersion == 1 && d.Status == "running", fmt.Sprintf("version %d %s", d.JobVersion, d.Status)
	})
	_, _, err = c.Jobs().Scale("life", "web", new(3), "busy", false, map[string]any{"by": "test"}, nil)
	must.ErrorContains(t, err, "400 (job scaling blocked due to active deployment)")
	scaled, _, err := c.Jobs().ScaleWithRequest("life", &nomadapi.ScalingRequest{
		Count: new(int64(3)), Target: map[string]string{"Group": "web"}, Message: "busy",
		Meta: map[string]any{"by": "test"}, PolicyOverride: true,
	}, nil)
	must.NoError(t, err)
	must.UUIDv4(t, scaled.EvalID)
	status, _, err := c.Jobs().ScaleStatus("life", nil)
	must.NoError(t, err)
	events := status.TaskGroups["web"].Events
	must.SliceLen(t, 2, events)
	must.Eq(t, 3, *events[0].Count)
	must.Eq(t, 2, events[0].PreviousCount)
	must.Eq(t, scaled.EvalID, *events[0].EvalID)
	must.Eq(t, "test", events[0].Meta["by"])
	// The refusal is in the history, as upstream records it.
	must.True(t, events[1].Error)
	must.Nil(t, events[1].Count)
	must.Eq(t, "job scaling blocked due to active deployment", events[1].Message)
	must.Eq(t, any(float64(3)), events[1].Meta["OriginalCount"])
	must.Eq(t, "busy", events[1].Meta["OriginalMessage"])

	versions, diffs, _, err := c.Jobs().Versions("life", true, nil)
	must.NoError(t, err)
	must.SliceLen(t, 3, versions)
	must.Eq(t, 2, *versions[0].Version)
	must.Eq(t, 3, *versions[0].TaskGroups[0].Count)
	must.SliceLen(t, 2, diffs)

	_, _, err = c.Jobs().Stable("life", 0, true, nil)
	must.NoError(t, err)
	prior := uint64(2)
	reverted, _, err := c.Jobs().Revert("life", 0, &prior, nil, "", "")
	must.NoError(t, err)
	must.UUIDv4(t, reverted.EvalID)
	got, _, err := c.Jobs().Info("life", nil)
	must.NoError(t, err)
	must.Eq(t, 3, *got.Version)
	must.Eq(t, 1, *got.TaskGroups[0].Count)
	versions, _, _, err = c.Jobs().Versions("life", false, nil)
	must.NoError(t, err)
	must.True(t, *versions[len(versions)-1].Stable, must.Sprint("version 0 was marked stable"))
}

// Bad lifecycle requests are refused with a status and a message naming
// the problem; an unknown job is a 404.
func TestHTTP_JobLifecycleBadInput(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	c := officialClient(t, a)
	_, _, err := c.Jobs().Register(mockJob("life", "mock_driver", map[string]any{"run_for": "5m"}), nil)
	must.NoError(t, err)

	for _, tc := range []struct {
		method, path, body string
		code               int
		msg                string
	}{
		{"GET", "/v1/job/nope/versions", "", 404, "job versions not found"},
		{"GET", "/v1/job/life/versions?diffs=maybe", "", 400, "Invalid diffs value"},
		{"PUT", "/v1/job/life/revert", `{"JobID": "other", "JobVersion": 0}`, 400, "Job ID does not match"},
		{"PUT", "/v1/job/life/revert", `{"JobVersion": 0}`, 400, "can't revert to current version"},
		{"PUT", "/v1/job/nope/revert", `{"JobVersion": 0}`, 404, "not found"},
		{"PUT", "/v1/job/life/revert", `{"JobVersion": "zero"}`, 400, `field "JobVersion"`},
		{"PUT", "/v1/job/life/stable", `{"JobVersion": 9, "Stable": true}`, 404, "not found"},
		{"PUT", "/v1/job/life/scale", `{"Count": 2}`, 400, "missing task group name"},
		{"PUT", "/v1/job/life/scale", `{"Count": 2, "Target": {"Group": "web"}, "Bogus": 1}`, 400, `unknown field "Bogus"`},
		{"PUT", "/v1/job/life/scale", `{"Count": 20000, "Target": {"Group": "web"}}`, 400, "exceeds the maximum of 10000"},
		{"PUT", "/v1/job/life/plan", `{}`, 400, "Job must be specified"},
		{"PUT", "/v1/job/life/plan", `{"Job": {"ID": "other"}}`, 400, "Job ID does not match"},
		{"PUT", "/v1/job/life/plan", `{"Job": {"ID": "life", "TaskGroups": [{"Name": "web", "Count": -1}]}}`, 400, "count can't be negative"},
	} {
		code, body := rawRequest(t, tc.method, a.HTTPAddr+tc.path, tc.body)
		must.Eq(t, tc.code, code, must.Sprintf("%s %s %s: %s", tc.method, tc.path, tc.body, body))
		must.StrContains(t, body, tc.msg, must.Sprintf("%s %s %s", tc.method, tc.path, tc.body))
	}
}
