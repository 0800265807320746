package command

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/cli"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
	"github.com/nomad-edge/nomad/testutil/wait"
)

func deploymentList(m Meta) cli.Command   { return &DeploymentListCommand{Meta: m} }
func deploymentStatus(m Meta) cli.Command { return &DeploymentStatusCommand{Meta: m} }
func deploymentPause(m Meta) cli.Command  { return newDeploymentPause(m, true) }
func deploymentResume(m Meta) cli.Command { return newDeploymentPause(m, false) }
func deploymentFail(m Meta) cli.Command   { return newDeploymentFail(m) }
func deploymentPromote(m Meta) cli.Command {
	return newDeploymentPromote(m)
}

func writeUpdateJob(t *testing.T, id, update string) string {
	t.Helper()
	src := `job "` + id + `" {
  group "web" {
    count = 2
    update {
` + update + `
    }
    task "web" {
      driver = "mock_driver"
      config {
        run_for = "5m"
      }
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
`
	path := filepath.Join(t.TempDir(), id+".nomad.hcl")
	must.NoError(t, os.WriteFile(path, []byte(src), 0o600))
	return path
}

// `job run` follows the deployment it started to its end, printing the
// group table as plain lines when its output is not a terminal (a CI log),
// and exits 0 once it succeeds; `deployment list` and `deployment status`
// then show it with upstream's columns.
func TestJobRun_FollowsDeployment(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	path := writeUpdateJob(t, "dep", `max_parallel = 1
      min_healthy_time = "200ms"
      healthy_deadline = "30s"`)
	code, out, errOut := run(t, a, jobRun, path)
	must.Eq(t, exitOK, code, must.Sprintf("stdout:\n%s\nstderr:\n%s", out, errOut))
	must.StrContains(t, out, "Monitoring deployment")
	must.StrContains(t, out, "Task Group  Desired  Placed  Healthy  Unhealthy  Progress Deadline")
	must.StrContains(t, out, "successful")
	must.StrContains(t, out, "Deployment completed successfully")

	code, out, _ = run(t, a, deploymentList)
	must.Eq(t, exitOK, code)
	must.StrContains(t, out, "ID        Job ID  Job Version  Status      Description")
	must.StrContains(t, out, "dep     0            successful  Deployment completed successfully")
	id := strings.Fields(strings.Split(out, "\n")[1])[0]

	code, out, _ = run(t, a, deploymentStatus, id[:4])
	must.Eq(t, exitOK, code, must.Sprint(out))
	must.StrContains(t, out, "Job ID      = dep")
	must.StrContains(t, out, "Status      = successful")
	must.StrContains(t, out, "Deployed\nTask Group  Desired  Placed  Healthy  Unhealthy  Progress Deadline\nweb         2        2       2        0")

	code, out, _ = run(t, a, jobStatusCmd, "dep")
	must.Eq(t, exitOK, code)
	must.StrContains(t, out, "Latest Deployment\nID          = "+id[:8]+"\nStatus      = successful")

	// A finished deployment can be neither paused nor failed.
	code, _, errOut = run(t, a, deploymentPause, id)
	must.Eq(t, exitError, code)
	must.StrContains(t, errOut, "can't pause terminal deployment")
	code, _, errOut = run(t, a, deploymentStatus, "zz")
	must.Eq(t, exitError, code)
	must.StrContains(t, errOut, `No deployment(s) with prefix or id "zz" found`)
}

// A canary deployment waits for promotion: `job run -detach` returns at
// once, `deployment status` shows the canary columns, `deployment promote`
// lets the rollout go on, and pause/resume/fail act on a running one.
func TestDeployment_PromotePauseResumeFail(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	id := canaryAwaitingPromotion(t, a, "can")
	client := apiClient(t, a)
	code, out, _ := run(t, a, deploymentStatus, id)
	must.Eq(t, exitOK, code)
	must.StrContains(t, out, "Description = Deployment is running but requires manual promotion")
	must.StrContains(t, out, "Task Group  Promoted  Desired  Canaries  Placed  Healthy  Unhealthy  Progress Deadline\nweb         false     2        1         1       1")

	code, out, _ = run(t, a, deploymentPause, "-detach", id)
	must.Eq(t, exitOK, code)
	must.StrContains(t, out, "paused")
	code, out, _ = run(t, a, deploymentResume, "-detach", id)
	must.Eq(t, exitOK, code)
	must.StrContains(t, out, "resumed")

	code, out, errOut := run(t, a, deploymentPromote, "-detach", id)
	must.Eq(t, exitOK, code, must.Sprint(errOut))
	must.StrContains(t, out, "promoted")
	wait.Poll(t, 30*time.Second, "deployment successful", func() (bool, string) {
		d, _, err := client.Deployments().Info(id, nil)
		must.NoError(t, err)
		return d.Status == "successful", d.Status + " " + d.StatusDescription
	})

	code, _, errOut = run(t, a, deploymentFail, id)
	must.Eq(t, exitError, code)
	must.StrContains(t, errOut, "can't fail terminal deployment")
}

// canaryAwaitingPromotion runs the job id with one canary, updates it,
// and returns the deployment of version 1 once its canary is healthy and
// it waits for promotion.
func canaryAwaitingPromotion(t *testing.T, a *agenttest.Agent, id string) string {
	t.Helper()
	path := writeUpdateJob(t, id, `max_parallel = 1
      canary = 1
      min_healthy_time = "200ms"
      healthy_deadline = "30s"`)
	code, _, _ := run(t, a, jobRun, path)
	must.Eq(t, exitOK, code)

	src, err := os.ReadFile(path)
	must.NoError(t, err)
	must.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(src), `run_for = "5m"`, `run_for = "6m"`, 1)), 0o600))
	code, out, _ := run(t, a, jobRun, "-detach", path)
	must.Eq(t, exitOK, code, must.Sprint(out))

	client := apiClient(t, a)
	var depID string
	wait.Poll(t, 30*time.Second, "the canary healthy", func() (bool, string) {
		d, _, err := client.Jobs().LatestDeployment(id, nil)
		must.NoError(t, err)
		if d == nil || d.JobVersion != 1 {
			return false, "no deployment of version 1"
		}
		depID = d.ID
		return d.TaskGroups["web"].HealthyAllocs == 1, d.StatusDescription
	})
	return depID
}

// On a terminal the monitor redraws the deployment in place: each new
// drawing first moves the cursor up over the previous one and clears it,
// so the operator sees one live table instead of a scrolling log.
func TestDeploymentMonitor_RedrawsInPlaceOnTerminal(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	path := writeUpdateJob(t, "tty", `max_parallel = 1
      min_healthy_time = "2s"
      healthy_deadline = "30s"`)
	code, _, _ := run(t, a, jobRun, "-detach", path)
	must.Eq(t, exitOK, code)
	client := apiClient(t, a)
	var d *api.Deployment
	wait.Poll(t, 30*time.Second, "a deployment", func() (bool, string) {
		var err error
		d, _, err = client.Jobs().LatestDeployment("tty", nil)
		must.NoError(t, err)
		return d != nil, "none yet"
	})

	ui := cli.NewMockUi()
	var screen strings.Builder
	m := newDeploymentMonitor(ui, client, view{})
	m.tty = &screen
	must.Eq(t, exitOK, m.follow(d))
	out := screen.String()
	must.StrContains(t, out, "Task Group  Desired  Placed  Healthy  Unhealthy  Progress Deadline")
	must.StrContains(t, out, "Status      = successful")
	must.StrContains(t, out, "\x1b[", must.Sprint("later drawings move up over earlier ones"))
	must.StrContains(t, ui.OutputWriter.String(), "✓ Deployment")
	must.StrNotContains(t, ui.OutputWriter.String(), "Task Group", must.Sprint("the table goes to the terminal only"))
}
