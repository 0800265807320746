package agent_test

import (
	"net/http"
	"testing"
	"time"

	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent/agenttest"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// The official Go client follows a job's deployment the way `nomad job
// run` and dashboards do: the latest deployment of a canonicalized service
// job (which carries upstream's default update block), the list, one
// deployment and its allocations, all in upstream's shapes. Promoting a
// deployment without canaries is a 400 naming why.
func TestHTTP_OfficialClientDeployments(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	c := officialClient(t, a)

	job := mockJob("dep", "mock_driver", map[string]any{"run_for": "5m"})
	job.Canonicalize()
	must.NotNil(t, job.Update, must.Sprint("the official client fills an update block"))
	must.NotNil(t, job.TaskGroups[0].Update)
	must.NotNil(t, job.TaskGroups[0].Migrate, must.Sprint("and a migrate block: accepted as it is"))
	_, _, err := c.Jobs().Register(job, nil)
	must.NoError(t, err)

	var d *nomadapi.Deployment
	wait.Poll(t, 30*time.Second, "a deployment", func() (bool, string) {
		d, _, err = c.Jobs().LatestDeployment("dep", nil)
		must.NoError(t, err)
		return d != nil, "none"
	})
	must.Eq(t, "dep", d.JobID)
	must.Eq(t, uint64(0), d.JobVersion)
	must.Eq(t, "running", d.Status)
	must.Eq(t, "Deployment is running", d.StatusDescription)
	must.Eq(t, 1, d.TaskGroups["web"].DesiredTotal)
	must.Eq(t, 10*time.Minute, d.TaskGroups["web"].ProgressDeadline)

	list, qm, err := c.Deployments().List(nil)
	must.NoError(t, err)
	must.Positive(t, qm.LastIndex)
	must.SliceLen(t, 1, list)
	must.Eq(t, d.ID, list[0].ID)

	info, _, err := c.Deployments().Info(d.ID, nil)
	must.NoError(t, err)
	must.Eq(t, d.ID, info.ID)

	byJob, _, err := c.Jobs().Deployments("dep", false, nil)
	must.NoError(t, err)
	must.SliceLen(t, 1, byJob)

	allocs, _, err := c.Deployments().Allocations(d.ID, nil)
	must.NoError(t, err)
	must.SliceLen(t, 1, allocs)

	_, _, err = c.Deployments().PromoteAll(d.ID, nil)
	must.Error(t, err)
	status, msg := statusOf(t, err)
	must.Eq(t, http.StatusBadRequest, status)
	must.StrContains(t, msg, "no canaries to promote")

	_, _, err = c.Deployments().Info("00000000-0000-0000-0000-000000000000", nil)
	must.Error(t, err)

	_, _, err = c.Deployments().Pause(d.ID, true, nil)
	must.NoError(t, err)
	paused, _, err := c.Deployments().Info(d.ID, nil)
	must.NoError(t, err)
	must.Eq(t, "paused", paused.Status)
	resp, _, err := c.Deployments().Fail(d.ID, nil)
	must.NoError(t, err)
	must.UUIDv4(t, resp.EvalID)
	failed, _, err := c.Deployments().Info(d.ID, nil)
	must.NoError(t, err)
	must.Eq(t, "failed", failed.Status)
	must.Eq(t, "Deployment marked as failed", failed.StatusDescription)
}
