package command

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/cli"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

func jobRestart(m Meta) cli.Command {
	return &JobRestartCommand{Meta: m, interactive: func() bool { return false }}
}

// restartJobFile is a job of three allocations with two tasks each.
func restartJobFile(t *testing.T) string {
	t.Helper()
	src := `job "rs" {
  group "g1" {
    count = 3
    task "t1" {
      driver = "mock_driver"
      config { run_for = "10m" }
    }
    task "t2" {
      driver = "mock_driver"
      config { run_for = "10m" }
    }
  }
}
`
	path := filepath.Join(t.TempDir(), "rs.nomad.hcl")
	must.NoError(t, os.WriteFile(path, []byte(src), 0o600))
	return path
}

func restartsOf(t *testing.T, c *api.Client, allocID, task string) uint64 {
	t.Helper()
	a, _, err := c.Allocations().Info(allocID, nil)
	must.NoError(t, err)
	return a.TaskStates[task].Restarts
}

// job restart restarts every running task of the job's allocations in
// place, in batches (a batch header only when a batch holds more than one,
// as upstream prints), or only the tasks named; -reschedule stops each
// allocation and waits for its replacement to run; bad flags are refused
// with upstream's words before anything is touched.
func TestJobRestart(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	code, out, errOut := run(t, a, jobRun, restartJobFile(t))
	must.Eq(t, 0, code, must.Sprint(out, errOut))
	allocs := waitRunning(t, a, "rs", 3)
	c := apiClient(t, a)

	code, out, errOut = run(t, a, jobRestart, "-yes", "-batch-size", "2", "rs")
	must.Eq(t, 0, code, must.Sprint(out, errOut))
	must.RegexMatch(t, regexp.MustCompile(`==> \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ: Restarting 3 allocations\n`), out)
	must.StrContains(t, out, "Restarting 1st batch of 2 allocations")
	must.StrContains(t, out, "Restarting 2nd batch of 1 allocations")
	must.StrContains(t, out, `Restarting running tasks in allocation "`+allocs[0].ID[:8]+`" for group "g1"`)
	must.StrContains(t, out, "Job restart finished\n\nJob restarted successfully!")
	for _, al := range allocs {
		must.Eq(t, 1, restartsOf(t, c, al.ID, "t1"))
		must.Eq(t, 1, restartsOf(t, c, al.ID, "t2"))
	}

	code, out, errOut = run(t, a, jobRestart, "-yes", "-task", "t2", "rs")
	must.Eq(t, 0, code, must.Sprint(out, errOut))
	must.StrNotContains(t, out, "batch of")
	must.StrContains(t, out, `Restarting task "t2" in allocation "`+allocs[1].ID[:8]+`" for group "g1"`)
	must.Eq(t, 1, restartsOf(t, c, allocs[1].ID, "t1"))
	must.Eq(t, 2, restartsOf(t, c, allocs[1].ID, "t2"))

	code, out, errOut = run(t, a, jobRestart, "-yes", "-reschedule", "-batch-size", "50%", "rs")
	must.Eq(t, 0, code, must.Sprint(out, errOut))
	must.StrContains(t, out, "Restarting 1st batch of 2 allocations")
	must.StrContains(t, out, `Rescheduling allocation "`+allocs[2].ID[:8]+`" for group "g1"`)
	must.RegexMatch(t, regexp.MustCompile(`Allocation "`+allocs[2].ID[:8]+`" replaced by "([0-9a-f]{8})", waiting for "[0-9a-f]{8}" to start running`), out)
	must.Eq(t, 3, strings.Count(out, `is "running"`))
	list, _, err := c.Jobs().Allocations("rs", false, nil)
	must.NoError(t, err)
	running := 0
	for _, n := range list {
		isOld := false
		for _, old := range allocs {
			isOld = isOld || old.ID == n.ID
		}
		if isOld {
			must.Eq(t, api.AllocDesiredStatusStop, n.DesiredStatus)
		} else if n.ClientStatus == api.AllocClientStatusRunning {
			running++
		}
	}
	must.Eq(t, 3, running, must.Sprint(describe(list, nil)))

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-yes", "-reschedule", "-task", "t1", "rs"}, "The -reschedule option cannot be used with -task"},
		{[]string{"-yes", "-batch-size", "0", "rs"}, `Invalid -batch-size value "0": number value must be greater than zero`},
		{[]string{"-yes", "-batch-size", "120%", "rs"}, `Invalid -batch-size value "120%": percentage value must be between 1% and 100%`},
		{[]string{"rs"}, `Invalid -on-error value "ask": "ask" cannot be used when terminal is not interactive`},
		{[]string{"-yes", "-batch-wait", "ask", "rs"}, `Invalid -batch-wait value "ask": "ask" cannot be used when terminal is not interactive`},
		{[]string{"-yes", "-all-tasks", "rs"}, "The -all-tasks option is not supported by this version"},
		{[]string{"-yes", "-group", "nope", "rs"}, `Group "nope" not found in job "rs"`},
		{[]string{"-yes", "-task", "nope", "rs"}, `Task "nope" not found in job "rs"`},
		{[]string{"-yes", "nojob"}, `No job(s) with prefix or id "nojob" found`},
	} {
		code, _, errOut := run(t, a, jobRestart, tc.args...)
		must.Eq(t, 1, code, must.Sprint(tc.args))
		must.StrContains(t, errOut, tc.want)
	}
}

// The allocations a restart picks: running ones of the named groups, the
// named tasks only where their group has them; an `unknown` allocation
// (its node cut off) is skipped and named whatever -verbose says, since
// its client cannot be reached; with -verbose the others skipped are
// named with their statuses.
func TestJobRestart_Targets(t *testing.T) {
	group := func(name string, tasks ...string) *api.TaskGroup {
		tg := &api.TaskGroup{Name: &name}
		for _, task := range tasks {
			tg.Tasks = append(tg.Tasks, &api.Task{Name: task})
		}
		return tg
	}
	job := &api.Job{TaskGroups: []*api.TaskGroup{group("web", "app", "proxy"), group("db", "pg")}}
	stub := func(id, tg, desired, client string) *api.AllocationListStub {
		return &api.AllocationListStub{ID: id + "-0000-0000-0000-000000000000", TaskGroup: tg, DesiredStatus: desired, ClientStatus: client}
	}
	stubs := []*api.AllocationListStub{
		stub("aaaaaaaa", "web", "run", "running"),
		stub("bbbbbbbb", "web", "run", "unknown"),
		stub("cccccccc", "web", "stop", "complete"),
		stub("dddddddd", "db", "run", "running"),
		stub("eeeeeeee", "web", "run", "pending"),
	}
	ui := cli.NewMockUi()
	c := &JobRestartCommand{Meta: Meta{Ui: ui}, now: func() time.Time { return time.Unix(0, 0) }}

	got := c.restartTargets(job, stubs, &restartOptions{tasks: []string{"proxy"}}, view{})
	must.SliceLen(t, 1, got)
	must.Eq(t, "aaaaaaaa", got[0].stub.ID[:8])
	must.Eq(t, []string{"proxy"}, got[0].tasks)
	must.StrContains(t, ui.OutputWriter.String(), `Skipping allocation "bbbbbbbb": its node is disconnected (client status "unknown")`)
	must.StrNotContains(t, ui.OutputWriter.String(), "cccccccc")

	ui.OutputWriter.Reset()
	got = c.restartTargets(job, stubs, &restartOptions{reschedule: true, verbose: true, groups: []string{"web"}}, view{verbose: true})
	must.SliceLen(t, 2, got, must.Sprint("running and pending allocations of web are rescheduled"))
	must.StrContains(t, ui.OutputWriter.String(), `because desired status is "stop" and client status is "complete"`)
}
