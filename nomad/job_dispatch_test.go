package nomad

import (
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

func parameterizedJob() *structs.Job {
	job := mock.BatchJob()
	job.ID = "ingest"
	job.Name = "ingest"
	job.Meta = map[string]string{"site": "default", "owner": "ops"}
	job.ParameterizedJob = &structs.ParameterizedJobConfig{
		Payload: structs.DispatchPayloadRequired, MetaRequired: []string{"site"}, MetaOptional: []string{"level"},
	}
	job.TaskGroups[0].Tasks[0].DispatchPayload = &structs.DispatchPayloadConfig{File: "input.json"}
	return job
}

func dispatch(s *Server, job *structs.Job, payload []byte, meta map[string]string) (*structs.JobDispatchResponse, error) {
	var resp structs.JobDispatchResponse
	err := s.RPC("Job.Dispatch", &structs.JobDispatchRequest{JobID: job.ID, Payload: payload, Meta: meta,
		WriteRequest: structs.WriteRequest{Namespace: job.Namespace}}, &resp)
	return &resp, err
}

// A parameterized job never runs itself: registering it creates no
// evaluation, and it is running (waiting for dispatches) until stopped.
func TestJob_RegisterParentCreatesNoEval(t *testing.T) {
	s := lifecycleServer(t)
	for _, job := range []*structs.Job{parameterizedJob(), periodicJob([]string{"0 3 * * *"}, "UTC")} {
		resp := register(t, s, job)
		must.Eq(t, "", resp.EvalID, must.Sprint(job.ID))
		evals, err := s.State().EvalsByJob(nil, job.Namespace, job.ID)
		must.NoError(t, err)
		must.SliceEmpty(t, evals)
		must.Eq(t, structs.JobStatusRunning, mustJob(t, s.State(), job).Status)
	}
}

// Each dispatch is checked against the parameterized block, and each
// error names what is wrong, so a script calling `job dispatch` can tell
// its caller which key to add.
func TestJob_DispatchValidation(t *testing.T) {
	s := lifecycleServer(t)
	job := parameterizedJob()
	register(t, s, job)
	ok := map[string]string{"site": "berlin"}

	cases := []struct {
		name    string
		payload []byte
		meta    map[string]string
		want    string
	}{
		{"missing required meta", []byte("x"), map[string]string{"level": "2"}, "required meta keys: site"},
		{"unpermitted meta", []byte("x"), map[string]string{"site": "a", "colour": "red"}, "unpermitted metadata keys: colour"},
		{"payload required", nil, ok, "Payload is not provided but required"},
		{"payload too big", []byte(strings.Repeat("x", structs.DispatchPayloadSizeLimit+1)), ok, "Payload exceeds maximum size; 16385 > 16384"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := dispatch(s, job, tc.payload, tc.meta)
			must.ErrorIs(t, err, structs.ErrInvalidRequest)
			must.ErrorContains(t, err, tc.want)
		})
	}

	forbidden := parameterizedJob()
	forbidden.ID = "no-input"
	forbidden.ParameterizedJob.Payload = structs.DispatchPayloadForbidden
	register(t, s, forbidden)
	_, err := dispatch(s, forbidden, []byte("x"), ok)
	must.ErrorContains(t, err, "Payload provided but forbidden")

	_, err = dispatch(s, mock.BatchJob(), nil, nil)
	must.ErrorIs(t, err, structs.ErrUnknownJob)
	plain := mock.BatchJob()
	register(t, s, plain)
	_, err = dispatch(s, plain, nil, nil)
	must.ErrorContains(t, err, "is not a parameterized job")
}

// A dispatch registers a child `<parent>/dispatch-<unix>-<8 hex>` with the
// payload, the parent's meta overlaid with the dispatch's, and an
// evaluation that schedules it.
func TestJob_DispatchCreatesChild(t *testing.T) {
	s := lifecycleServer(t)
	job := parameterizedJob()
	register(t, s, job)

	resp, err := dispatch(s, job, []byte(`{"n":1}`), map[string]string{"site": "berlin"})
	must.NoError(t, err)
	must.StrHasPrefix(t, "ingest/dispatch-", resp.DispatchedJobID)
	must.Eq(t, len("ingest/dispatch-")+10+1+8, len(resp.DispatchedJobID))
	must.Positive(t, resp.JobCreateIndex)
	must.Eq(t, resp.JobCreateIndex, resp.EvalCreateIndex)

	child, err := s.State().JobByID(nil, job.Namespace, resp.DispatchedJobID)
	must.NoError(t, err)
	must.NotNil(t, child)
	must.Eq(t, "ingest", child.ParentID)
	must.True(t, child.Dispatched)
	must.Eq(t, `{"n":1}`, string(child.Payload))
	must.Eq(t, map[string]string{"site": "berlin", "owner": "ops"}, child.Meta)
	must.False(t, child.IsParent(), must.Sprint("the child runs"))
	ev, err := s.State().EvalByID(nil, resp.EvalID)
	must.NoError(t, err)
	must.Eq(t, child.ID, ev.JobID)

	second, err := dispatch(s, job, []byte("y"), map[string]string{"site": "paris"})
	must.NoError(t, err)
	must.NotEq(t, resp.DispatchedJobID, second.DispatchedJobID, must.Sprint("two dispatches in one second differ"))

	var urgent structs.JobDispatchResponse
	req := &structs.JobDispatchRequest{JobID: job.ID, Payload: []byte("z"), Meta: map[string]string{"site": "rome"}, Priority: 90,
		WriteRequest: structs.WriteRequest{Namespace: job.Namespace}}
	must.NoError(t, s.RPC("Job.Dispatch", req, &urgent))
	must.Eq(t, 90, mustJob(t, s.State(), &structs.Job{Namespace: job.Namespace, ID: urgent.DispatchedJobID}).Priority)
	req.Priority = 500
	must.ErrorContains(t, s.RPC("Job.Dispatch", req, &urgent), "dispatch priority must be between 1 and 100 (got 500)")
}

// `job periodic force` launches a child at once with a periodic-job
// evaluation; jobs that are not periodic, or stopped, are refused.
func TestJob_PeriodicForce(t *testing.T) {
	s := lifecycleServer(t)
	job := periodicJob([]string{"0 3 * * *"}, "Europe/Berlin")
	register(t, s, job)
	force := func(id string) (*structs.PeriodicForceResponse, error) {
		var resp structs.PeriodicForceResponse
		err := s.RPC("Job.PeriodicForce", &structs.PeriodicForceRequest{JobID: id,
			WriteRequest: structs.WriteRequest{Namespace: job.Namespace}}, &resp)
		return &resp, err
	}

	resp, err := force(job.ID)
	must.NoError(t, err)
	ev, err := s.State().EvalByID(nil, resp.EvalID)
	must.NoError(t, err)
	must.Eq(t, structs.EvalTriggerPeriodicJob, ev.TriggeredBy)
	must.StrHasPrefix(t, "nightly/periodic-", ev.JobID)
	must.Eq(t, resp.EvalCreateIndex, resp.Index)
	child := mustJob(t, s.State(), &structs.Job{Namespace: job.Namespace, ID: ev.JobID})
	must.Eq(t, "nightly", child.ParentID)

	plain := mock.BatchJob()
	register(t, s, plain)
	_, err = force(plain.ID)
	must.ErrorContains(t, err, "can't force launch non-periodic job")

	var dereg structs.JobDeregisterResponse
	must.NoError(t, s.RPC("Job.Deregister", &structs.JobDeregisterRequest{JobID: job.ID,
		WriteRequest: structs.WriteRequest{Namespace: job.Namespace}}, &dereg))
	must.Eq(t, "", dereg.EvalID, must.Sprint("stopping a template has nothing to schedule"))
	must.Eq(t, structs.JobStatusDead, mustJob(t, s.State(), job).Status)
	_, err = force(job.ID)
	must.ErrorContains(t, err, "stopped periodic job")
}

// Periodic and parameterized blocks are for batch work: upstream refuses
// them on service and system jobs, and a bad cron or time zone is named.
func TestJob_ValidateParentBlocks(t *testing.T) {
	s := lifecycleServer(t)
	service := mock.Job()
	service.Periodic = &structs.PeriodicConfig{Enabled: true, Specs: []string{"* * * * *"}}
	bad := periodicJob([]string{"0 3 * * *", "not a cron"}, "Mars/Olympus")
	param := mock.Job()
	param.Type = structs.JobTypeSystem
	param.TaskGroups[0].Count = 1
	param.ParameterizedJob = &structs.ParameterizedJobConfig{Payload: "sometimes"}

	cases := []struct {
		job  *structs.Job
		want []string
	}{
		{service, []string{`Periodic can only be used with "batch" or "sysbatch" scheduler`}},
		{bad, []string{`periodic: crons[1] "not a cron" is invalid`, `periodic: time_zone "Mars/Olympus" is invalid`}},
		{param, []string{`Parameterized job can only be used with "batch" or "sysbatch"`, `parameterized: payload must be one of`}},
	}
	for _, tc := range cases {
		var resp structs.JobRegisterResponse
		err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: tc.job}, &resp)
		must.ErrorIs(t, err, structs.ErrInvalidRequest)
		for _, w := range tc.want {
			must.ErrorContains(t, err, w)
		}
	}
}

// Whatever evaluation reaches a template (here one written directly), the
// real scheduler places nothing for it: only its children run.
func TestServer_ParentNeverGetsAllocations(t *testing.T) {
	s := testServer(t, nil)
	registerNode(t, s)
	job := parameterizedJob()
	register(t, s, job)

	ev := mustJob(t, s.State(), job).NewEval(structs.EvalTriggerJobRegister, s.clock.Now())
	_, _, err := s.raftApply(structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{ev}})
	must.NoError(t, err)

	waitEvalComplete(t, s, ev.ID)
	allocs, err := s.State().AllocsByJob(nil, job.Namespace, job.ID, true)
	must.NoError(t, err)
	must.SliceEmpty(t, allocs)
}

// `job plan` of a periodic job places nothing and says when it would
// launch, as upstream; the template itself is never scheduled.
func TestJob_PlanPeriodic(t *testing.T) {
	s := lifecycleServer(t)
	job := periodicJob([]string{"0 3 * * *"}, "UTC")
	var resp structs.JobPlanResponse
	must.NoError(t, s.RPC("Job.Plan", &structs.JobPlanRequest{Job: job, Diff: true}, &resp))
	now := s.clock.Now()
	must.True(t, resp.NextPeriodicLaunch.After(now))
	must.True(t, resp.NextPeriodicLaunch.Before(now.Add(24*time.Hour+time.Second)))
	must.Eq(t, 3, resp.NextPeriodicLaunch.UTC().Hour())
	must.MapEmpty(t, resp.Annotations.DesiredTGUpdates)
	must.Eq(t, structs.DiffTypeAdded, resp.Diff.Type)
}
