package agent_test

import (
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

// batchJob is a one-task batch job of mock_driver built with the official
// client's constructors.
func batchJob(id string) *nomadapi.Job {
	task := nomadapi.NewTask("web", "mock_driver")
	task.SetConfig("run_for", "100ms")
	task.Require(&nomadapi.Resources{CPU: new(100), MemoryMB: new(64)})
	group := nomadapi.NewTaskGroup("web", 1).AddTask(task)
	return nomadapi.NewBatchJob(id, id, "global", 50).AddTaskGroup(group)
}

// childrenOf lists the jobs whose ParentID is parent, as /v1/jobs shows.
func childrenOf(t *testing.T, c *nomadapi.Client, parent string) []*nomadapi.JobListStub {
	t.Helper()
	jobs, _, err := c.Jobs().List(nil)
	must.NoError(t, err)
	var out []*nomadapi.JobListStub
	for _, j := range jobs {
		if j.ParentID == parent {
			out = append(out, j)
		}
	}
	return out
}

func describeJobs(jobs []*nomadapi.JobListStub) string {
	var parts []string
	for _, j := range jobs {
		parts = append(parts, j.ID+"="+j.Status)
	}
	return fmt.Sprintf("%d children: %s", len(jobs), strings.Join(parts, ", "))
}

// The official client registers a periodic job (canonicalized, as tools
// do), reads its periodic block back, forces a launch, and sees the child
// in /v1/jobs with its ParentID, run to completion and counted in the
// parent's children summary. The parent never gets an allocation.
func TestHTTP_OfficialClientPeriodic(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	c := officialClient(t, a)

	job := batchJob("nightly")
	job.Periodic = &nomadapi.PeriodicConfig{Specs: []string{"0 3 * * *"}, TimeZone: new("Europe/Berlin"), ProhibitOverlap: new(true)}
	job.Canonicalize()
	resp, _, err := c.Jobs().Register(job, nil)
	must.NoError(t, err)
	must.Eq(t, "", resp.EvalID, must.Sprint("a periodic parent gets no evaluation"))

	got, _, err := c.Jobs().Info("nightly", nil)
	must.NoError(t, err)
	must.True(t, got.IsPeriodic())
	must.Eq(t, []string{"0 3 * * *"}, got.Periodic.Specs)
	must.Eq(t, "Europe/Berlin", *got.Periodic.TimeZone)
	must.True(t, *got.Periodic.ProhibitOverlap)
	must.True(t, *got.Periodic.Enabled)
	must.Eq(t, "running", *got.Status)
	// Upstream's client reads the expression in the zone of the time it
	// is given, as its CLI does.
	next, err := got.Periodic.Next(time.Now().In(mustLoc(t, "Europe/Berlin")))
	must.NoError(t, err)
	must.Eq(t, 3, next.In(mustLoc(t, "Europe/Berlin")).Hour())

	evalID, wm, err := c.Jobs().PeriodicForce("nightly", nil)
	must.NoError(t, err)
	must.UUIDv4(t, evalID)
	must.Positive(t, wm.LastIndex)
	ev, _, err := c.Evaluations().Info(evalID, nil)
	must.NoError(t, err)
	must.Eq(t, "periodic-job", ev.TriggeredBy)
	must.StrHasPrefix(t, "nightly/periodic-", ev.JobID)

	wait.Poll(t, 30*time.Second, "the forced child to run to completion", func() (bool, string) {
		kids := childrenOf(t, c, "nightly")
		return len(kids) == 1 && kids[0].Status == "dead", describeJobs(kids)
	})
	summary, _, err := c.Jobs().Summary("nightly", nil)
	must.NoError(t, err)
	must.Eq(t, nomadapi.JobChildrenSummary{Dead: 1}, *summary.Children)
	allocs, _, err := c.Jobs().Allocations("nightly", true, nil)
	must.NoError(t, err)
	must.SliceEmpty(t, allocs)

	list, _, err := c.Jobs().List(&nomadapi.QueryOptions{Prefix: "nightly"})
	must.NoError(t, err)
	must.True(t, list[0].Periodic, must.Sprint("the parent's list row says it is periodic"))

	// Stopping the parent stops its launches: forcing is refused.
	_, _, err = c.Jobs().Deregister("nightly", false, nil)
	must.NoError(t, err)
	_, _, err = c.Jobs().PeriodicForce("nightly", nil)
	code, body := statusOf(t, err)
	must.Eq(t, http.StatusBadRequest, code)
	must.StrContains(t, body, "stopped periodic job")
}

func mustLoc(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	must.NoError(t, err)
	return loc
}

// The official client registers a parameterized job and dispatches it
// with meta and a payload: the reply carries upstream's fields, bad meta
// is a 400 naming the key, and the client writes the payload into the
// dispatched task's local/ directory.
func TestHTTP_OfficialClientDispatch(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	c := officialClient(t, a)

	job := batchJob("ingest")
	job.ParameterizedJob = &nomadapi.ParameterizedJobConfig{Payload: "required", MetaRequired: []string{"site"}}
	job.TaskGroups[0].Tasks[0].DispatchPayload = &nomadapi.DispatchPayloadConfig{File: "input.txt"}
	job.TaskGroups[0].Tasks[0].SetConfig("run_for", "5m")
	resp, _, err := c.Jobs().Register(job, nil)
	must.NoError(t, err)
	must.Eq(t, "", resp.EvalID)

	_, _, err = c.Jobs().Dispatch("ingest", map[string]string{"colour": "red"}, []byte("x"), "", nil)
	code, body := statusOf(t, err)
	must.Eq(t, http.StatusBadRequest, code)
	must.StrContains(t, body, "unpermitted metadata keys: colour")
	must.StrContains(t, body, "required meta keys: site")

	d, wm, err := c.Jobs().Dispatch("ingest", map[string]string{"site": "berlin"}, []byte("hello edge"), "", nil)
	must.NoError(t, err)
	must.StrHasPrefix(t, "ingest/dispatch-", d.DispatchedJobID)
	must.UUIDv4(t, d.EvalID)
	must.Positive(t, d.JobCreateIndex)
	must.Eq(t, d.JobCreateIndex, d.EvalCreateIndex)
	must.Eq(t, wm.LastIndex, d.EvalCreateIndex)

	child, _, err := c.Jobs().Info(d.DispatchedJobID, nil)
	must.NoError(t, err)
	must.Eq(t, "ingest", *child.ParentID)
	must.True(t, child.Dispatched)
	must.Eq(t, "hello edge", string(child.Payload))
	must.Eq(t, "berlin", child.Meta["site"])
	must.Len(t, 1, childrenOf(t, c, "ingest"))

	var allocs []*nomadapi.AllocationListStub
	wait.Poll(t, 30*time.Second, "the dispatched allocation running", func() (bool, string) {
		allocs, _, err = c.Jobs().Allocations(d.DispatchedJobID, false, nil)
		return err == nil && len(allocs) == 1 && allocs[0].ClientStatus == "running", describeStubs(allocs)
	})
	alloc, _, err := c.Allocations().Info(allocs[0].ID, nil)
	must.NoError(t, err)
	rc, err := c.AllocFS().Cat(alloc, "web/local/input.txt", nil)
	must.NoError(t, err)
	defer rc.Close()
	payload, err := io.ReadAll(rc)
	must.NoError(t, err)
	must.Eq(t, "hello edge", string(payload))

	urgent, _, err := c.Jobs().DispatchOpts(&nomadapi.DispatchOptions{JobID: "ingest", Meta: map[string]string{"site": "rome"},
		Payload: []byte("x"), Priority: 90}, nil)
	must.NoError(t, err)
	uj, _, err := c.Jobs().Info(urgent.DispatchedJobID, nil)
	must.NoError(t, err)
	must.Eq(t, 90, *uj.Priority, must.Sprint("the official client's Priority is honoured"))
}
