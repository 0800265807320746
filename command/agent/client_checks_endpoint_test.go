package agent_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/nomad-edge/nomad/testutil/wait"

	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

// GET /v1/client/allocation/:id/checks reaches the node through its
// session and answers upstream's shape, which the official client's
// Allocations().Checks decodes: one entry per check, keyed by its ID.
func TestClientAPI_AllocChecks(t *testing.T) {
	ec := newEdgeCluster(t, nil)
	job := mockJob("checks", "raw_exec", map[string]any{"command": "/bin/sleep", "args": []string{"300"}})
	job.TaskGroups[0].Tasks[0].Services = []*nomadapi.Service{{
		Name: "web", Provider: "nomad",
		Checks: []nomadapi.ServiceCheck{{
			Name: "true", Type: "script", Command: "/bin/sh", Args: []string{"-c", "echo fine"},
			Interval: time.Second, Timeout: time.Second,
		}},
	}}
	_, _, err := ec.api.Jobs().Register(job, nil)
	must.NoError(t, err)
	var allocID string
	wait.Poll(t, 30*time.Second, "the task running", func() (bool, string) {
		allocs, _, err := ec.api.Jobs().Allocations("checks", false, nil)
		if err != nil || len(allocs) != 1 || allocs[0].ClientStatus != "running" {
			return false, fmt.Sprint(err, describeStubs(allocs))
		}
		allocID = allocs[0].ID
		return true, ""
	})
	var got nomadapi.AllocCheckStatuses
	wait.Poll(t, 30*time.Second, "a passing check", func() (bool, string) {
		got, err = ec.api.Allocations().Checks(allocID, nil)
		if err != nil || len(got) != 1 {
			return false, fmt.Sprint(err, got)
		}
		for _, c := range got {
			return c.Status == "success", fmt.Sprintf("%+v", c)
		}
		return false, ""
	})
	for id, c := range got {
		must.EqOp(t, id, c.ID)
		must.EqOp(t, "true", c.Check)
		must.EqOp(t, "web", c.Service)
		must.EqOp(t, "web", c.Task)
		must.EqOp(t, "checks.web[0]", c.Group)
		must.EqOp(t, "healthiness", c.Mode)
		must.EqOp(t, "fine\n", c.Output)
		must.Positive(t, c.Timestamp)
	}
	_, err = ec.api.Allocations().Checks("00000000-0000-0000-0000-000000000000", nil)
	must.Error(t, err)
}
