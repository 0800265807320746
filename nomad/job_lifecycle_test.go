package nomad

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// lifecycleServer is a leader without scheduling workers, so what the
// tests read is what the endpoints wrote.
func lifecycleServer(t *testing.T) *Server {
	return testServer(t, func(c *Config) { c.NumSchedulers = 0 })
}

func register(t *testing.T, s *Server, job *structs.Job) *structs.JobRegisterResponse {
	t.Helper()
	var resp structs.JobRegisterResponse
	must.NoError(t, s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job.Copy()}, &resp))
	return &resp
}

func versions(t *testing.T, s *Server, job *structs.Job, diffs bool) *structs.JobVersionsResponse {
	t.Helper()
	var resp structs.JobVersionsResponse
	req := &structs.JobVersionsRequest{JobID: job.ID, Diffs: diffs, QueryOptions: structs.QueryOptions{Namespace: job.Namespace}}
	must.NoError(t, s.RPC("Job.GetJobVersions", req, &resp))
	return &resp
}

// Every registered spec is a version, newest first, with the diff from the
// one before it: what `job history -p` prints.
func TestJob_GetJobVersions(t *testing.T) {
	s := lifecycleServer(t)
	job := mock.Job()
	register(t, s, job)
	job.TaskGroups[0].Count = 3
	register(t, s, job)

	resp := versions(t, s, job, true)
	must.Len(t, 2, resp.Versions)
	must.Eq(t, 1, resp.Versions[0].Version)
	must.Eq(t, 0, resp.Versions[1].Version)
	must.Len(t, 1, resp.Diffs)
	must.Eq(t, structs.DiffTypeEdited, resp.Diffs[0].Type)
	must.Eq(t, &structs.FieldDiff{Type: structs.DiffTypeEdited, Name: "Count", Old: "10", New: "3"},
		resp.Diffs[0].TaskGroups[0].Fields[0])
	must.Positive(t, resp.Index)
}

// A revert registers the old spec as a new version with an evaluation;
// reverting to the current version, or over a version the caller did not
// expect, is refused.
func TestJob_Revert(t *testing.T) {
	s := lifecycleServer(t)
	job := mock.Job()
	register(t, s, job)
	job.TaskGroups[0].Count = 3
	register(t, s, job)

	var resp structs.JobRegisterResponse
	revert := func(version uint64, prior *uint64) error {
		return s.RPC("Job.Revert", &structs.JobRevertRequest{JobID: job.ID, JobVersion: version, EnforcePriorVersion: prior,
			WriteRequest: structs.WriteRequest{Namespace: job.Namespace}}, &resp)
	}
	must.ErrorContains(t, revert(1, nil), "can't revert to current version")
	wrong := uint64(0)
	must.ErrorContains(t, revert(0, &wrong), "current job has version 1; enforcing version 0")
	must.ErrorContains(t, revert(7, nil), "version 7")

	right := uint64(1)
	must.NoError(t, revert(0, &right))
	must.NotEq(t, "", resp.EvalID)
	cur, err := s.State().JobByID(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	must.Eq(t, 2, cur.Version)
	must.Eq(t, 10, cur.TaskGroups[0].Count, must.Sprint("version 0's spec is back"))
	ev, err := s.State().EvalByID(nil, resp.EvalID)
	must.NoError(t, err)
	must.Eq(t, cur.JobModifyIndex, ev.JobModifyIndex)
}

// Stability is set per version and shows on the job when it is current.
func TestJob_Stable(t *testing.T) {
	s := lifecycleServer(t)
	job := mock.Job()
	register(t, s, job)
	var resp structs.JobStabilityResponse
	req := &structs.JobStabilityRequest{JobID: job.ID, JobVersion: 0, Stable: true, WriteRequest: structs.WriteRequest{Namespace: job.Namespace}}
	must.NoError(t, s.RPC("Job.Stable", req, &resp))
	must.Positive(t, resp.Index)
	cur, err := s.State().JobByID(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	must.True(t, cur.Stable)

	req.JobVersion = 4
	must.ErrorIs(t, s.RPC("Job.Stable", req, &resp), structs.ErrUnknownJob)
}

// A scale sets one group's count as a new version with a job-scaling
// evaluation, bounded as a registration is.
func TestJob_Scale(t *testing.T) {
	s := lifecycleServer(t)
	job := mock.Job()
	register(t, s, job)

	scale := func(group string, count int64) (*structs.JobRegisterResponse, error) {
		var resp structs.JobRegisterResponse
		err := s.RPC("Job.Scale", &structs.JobScaleRequest{JobID: job.ID, Count: &count,
			Target: map[string]string{structs.ScalingTargetGroup: group}, Message: "more",
			WriteRequest: structs.WriteRequest{Namespace: job.Namespace}}, &resp)
		return &resp, err
	}
	before := uint64(s.clock.Now().UnixNano())
	resp, err := scale("web", 4)
	must.NoError(t, err)
	after := uint64(s.clock.Now().UnixNano())
	cur, err := s.State().JobByID(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	must.Eq(t, 4, cur.TaskGroups[0].Count)
	must.Eq(t, 1, cur.Version)
	ev, err := s.State().EvalByID(nil, resp.EvalID)
	must.NoError(t, err)
	must.Eq(t, structs.EvalTriggerScaling, ev.TriggeredBy)

	// An event without a count is recorded and changes nothing.
	var report structs.JobRegisterResponse
	must.NoError(t, s.RPC("Job.Scale", &structs.JobScaleRequest{JobID: job.ID, Error: true, Message: "no metrics",
		Target: map[string]string{structs.ScalingTargetGroup: "web"}}, &report))
	must.Eq(t, "", report.EvalID)
	var status structs.JobScaleStatusResponse
	must.NoError(t, s.RPC("Job.ScaleStatus", &structs.JobSpecificRequest{JobID: job.ID,
		QueryOptions: structs.QueryOptions{Namespace: job.Namespace}}, &status))
	events := status.JobScaleStatus.TaskGroups["web"].Events
	must.Len(t, 2, events)
	must.Eq(t, "no metrics", events[0].Message, must.Sprint("newest first"))
	must.True(t, events[0].Error)
	must.Nil(t, events[0].Count)
	must.Eq(t, "more", events[1].Message)
	must.Eq(t, 4, *events[1].Count)
	must.Eq(t, 10, events[1].PreviousCount)
	must.Eq(t, resp.EvalID, *events[1].EvalID)
	must.Between(t, before, events[1].Time, after, must.Sprint("stamped with server time"))

	var stale structs.JobRegisterResponse
	count := int64(2)
	err = s.RPC("Job.Scale", &structs.JobScaleRequest{JobID: job.ID, Count: &count, JobModifyIndex: 1,
		Target: map[string]string{structs.ScalingTargetGroup: "web"}}, &stale)
	must.ErrorContains(t, err, "Enforcing job modify index 1")

	_, err = scale("nope", 1)
	must.ErrorContains(t, err, `task group "nope" specified for scaling does not exist in job`)
	_, err = scale("web", -1)
	must.ErrorContains(t, err, "can't be negative")
	_, err = scale("web", structs.MaxGroupCount+1)
	must.ErrorContains(t, err, "exceeds the maximum")
	must.ErrorIs(t, err, structs.ErrInvalidRequest)
}

// A count change while the job's deployment is active is refused in
// upstream's words (autoscalers key on them) and changes nothing, unless
// the request says PolicyOverride; a finished deployment, or one of an
// earlier job under the same ID, does not block.
func TestJob_Scale_BlockedByActiveDeployment(t *testing.T) {
	s := lifecycleServer(t)
	job := mock.Job()
	register(t, s, job)
	cur, err := s.State().JobByID(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	d := structs.NewDeployment(cur, 0, s.clock.Now())
	// Healthy allocations still to come: the deployment watcher leaves it running.
	d.TaskGroups["web"] = &structs.DeploymentState{DesiredTotal: 10}
	must.NoError(t, s.State().UpsertDeployment(100, d))

	scale := func(count int64, override bool) error {
		var resp structs.JobRegisterResponse
		return s.RPC("Job.Scale", &structs.JobScaleRequest{JobID: job.ID, Count: &count, PolicyOverride: override,
			Target:       map[string]string{structs.ScalingTargetGroup: "web"},
			WriteRequest: structs.WriteRequest{Namespace: job.Namespace}}, &resp)
	}
	blocked := scale(4, false)
	must.ErrorIs(t, blocked, structs.ErrScalingBlocked)
	must.ErrorIs(t, blocked, structs.ErrInvalidRequest, must.Sprint("a 400, as upstream"))
	must.EqError(t, blocked, "job scaling blocked due to active deployment")
	after, err := s.State().JobByID(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	must.Eq(t, cur.Version, after.Version, must.Sprint("nothing registered"))
	// The refusal is recorded as an error event, as upstream records it.
	var status structs.JobScaleStatusResponse
	must.NoError(t, s.RPC("Job.ScaleStatus", &structs.JobSpecificRequest{JobID: job.ID,
		QueryOptions: structs.QueryOptions{Namespace: job.Namespace}}, &status))
	events := status.JobScaleStatus.TaskGroups["web"].Events
	must.Len(t, 1, events)
	must.True(t, events[0].Error)
	must.Nil(t, events[0].Count)
	must.Eq(t, "job scaling blocked due to active deployment", events[0].Message)
	must.Eq(t, any(int64(4)), events[0].Meta["OriginalCount"])
	// The text maps back to the sentinel on the far side of a forward.
	must.ErrorIs(t, structs.RPCError(blocked.Error()), structs.ErrInvalidRequest)

	must.NoError(t, scale(4, true))

	// Another incarnation's deployment does not block.
	old := d.Copy()
	old.ID = structs.GenerateUUID()
	old.JobCreateIndex = cur.CreateIndex - 1
	must.NoError(t, s.State().UpsertDeployment(101, old))
	must.NoError(t, scale(3, false))
}

// A registration against a stale index is refused in upstream's words,
// which is what `job run -check-index` relies on.
func TestJob_Register_EnforceIndex(t *testing.T) {
	s := lifecycleServer(t)
	job := mock.Job()
	var resp structs.JobRegisterResponse
	err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job.Copy(), EnforceIndex: true, JobModifyIndex: 5}, &resp)
	must.ErrorContains(t, err, "Enforcing job modify index 5: job does not exist")
	must.NoError(t, s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job.Copy(), EnforceIndex: true}, &resp))
	err = s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job.Copy(), EnforceIndex: true, JobModifyIndex: 1}, &resp)
	must.ErrorContains(t, err, "Enforcing job modify index 1: job exists with conflicting job modify index")
}

func plan(t *testing.T, s *Server, job *structs.Job) *structs.JobPlanResponse {
	t.Helper()
	var resp structs.JobPlanResponse
	must.NoError(t, s.RPC("Job.Plan", &structs.JobPlanRequest{Job: job.Copy(), Diff: true}, &resp))
	return &resp
}

// A plan reports what the scheduler would do and writes nothing: no job,
// no evaluation, no allocation.
func TestJob_Plan_NewJobWritesNothing(t *testing.T) {
	s := lifecycleServer(t)
	registerNode(t, s)
	job := mock.Job()
	job.TaskGroups[0].Count = 2
	before, err := s.State().LatestIndex()
	must.NoError(t, err)

	resp := plan(t, s, job)
	must.Eq(t, 2, resp.Annotations.DesiredTGUpdates["web"].Place)
	must.MapEmpty(t, resp.FailedTGAllocs)
	must.Eq(t, 0, resp.JobModifyIndex)
	must.Eq(t, structs.DiffTypeAdded, resp.Diff.Type)
	must.Eq(t, map[string]uint64{structs.UpdateTypeCreate: 2}, resp.Diff.TaskGroups[0].Updates)

	after, err := s.State().LatestIndex()
	must.NoError(t, err)
	must.Eq(t, before, after, must.Sprint("a plan must not write"))
	got, err := s.State().JobByID(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	must.Nil(t, got)
}

// A plan that cannot place says so per group, with the blocked evaluation
// a registration would create.
func TestJob_Plan_PlacementFailure(t *testing.T) {
	s := lifecycleServer(t)
	job := mock.Job()
	resp := plan(t, s, job)
	must.MapContainsKey(t, resp.FailedTGAllocs, "web")
	must.SliceNotEmpty(t, resp.CreatedEvals)
}

// What plan reports for a job whose allocation sits unknown on a
// disconnected node, inside its window: the unknown allocation is kept
// (ignored), never replaced, and a count increase places only the new
// instance. The plan's index lets `job run -check-index` refuse a job
// changed since.
func TestJob_Plan_UnknownAllocOnDisconnectedNode(t *testing.T) {
	s := lifecycleServer(t)
	up, away := registerNode(t, s), registerNode(t, s)
	job := mock.Job()
	job.TaskGroups[0].Count = 2
	window := time.Hour
	job.TaskGroups[0].MaxClientDisconnect = &window
	reg := register(t, s, job)
	stored, err := s.State().JobByID(nil, job.Namespace, job.ID)
	must.NoError(t, err)

	running, unknown := mock.AllocForNode(up), mock.AllocForNode(away)
	for _, a := range []*structs.Allocation{running, unknown} {
		a.Job, a.JobID, a.Namespace, a.TaskGroup = stored, stored.ID, stored.Namespace, "web"
	}
	running.ClientStatus = structs.AllocClientStatusRunning
	unknown.ClientStatus = structs.AllocClientStatusUnknown
	now := s.clock.Now()
	_, _, err = s.raftApply(structs.NodeUpdateStatusRequestType, &structs.NodeUpdateStatusRequest{
		NodeID: away.ID, Status: structs.NodeStatusDisconnected, UpdatedAt: now.UnixNano()})
	must.NoError(t, err)
	_, _, err = s.raftApply(structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{
		Job: stored, AllocsUpdated: []*structs.Allocation{running, unknown}, EvalID: reg.EvalID, UpdatedAt: now.UnixNano()})
	must.NoError(t, err)

	same := plan(t, s, job)
	u := same.Annotations.DesiredTGUpdates["web"]
	must.Eq(t, structs.DesiredUpdates{Ignore: 2}, *u, must.Sprint("the unknown allocation is not replaced"))
	must.Eq(t, structs.DiffTypeNone, same.Diff.Type)
	must.Eq(t, stored.JobModifyIndex, same.JobModifyIndex)

	job.TaskGroups[0].Count = 3
	more := plan(t, s, job)
	u = more.Annotations.DesiredTGUpdates["web"]
	must.Eq(t, 1, u.Place, must.Sprint("only the new instance is placed"))
	must.Eq(t, 0, u.Stop)
	must.Eq(t, structs.DiffTypeEdited, more.Diff.Type)
}

// A system job's plan carries annotations too, counted from the plan the
// system scheduler would submit: one placement per ready node.
func TestJob_Plan_SystemJobCountsPlacements(t *testing.T) {
	s := lifecycleServer(t)
	registerNode(t, s)
	registerNode(t, s)
	job := mock.Job()
	job.Type = structs.JobTypeSystem
	job.TaskGroups[0].Count = 1

	resp := plan(t, s, job)
	must.Eq(t, structs.DesiredUpdates{Place: 2}, *resp.Annotations.DesiredTGUpdates["web"])
	must.Eq(t, map[string]uint64{structs.UpdateTypeCreate: 2}, resp.Diff.TaskGroups[0].Updates)
	must.Eq(t, []string{"forces create"}, resp.Diff.TaskGroups[0].Tasks[0].Annotations)
}

// The plan's diff says what each change forces: a count increase creates,
// an edited task config on a running group replaces its allocations.
func TestJob_Plan_AnnotatesForcedChanges(t *testing.T) {
	s := lifecycleServer(t)
	node := registerNode(t, s)
	job := mock.Job()
	job.TaskGroups[0].Count = 1
	reg := register(t, s, job)
	stored, err := s.State().JobByID(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	a := mock.AllocForNode(node)
	a.Job, a.JobID, a.Namespace, a.TaskGroup = stored, stored.ID, stored.Namespace, "web"
	a.ClientStatus = structs.AllocClientStatusRunning
	_, _, err = s.raftApply(structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{
		Job: stored, AllocsUpdated: []*structs.Allocation{a}, EvalID: reg.EvalID, UpdatedAt: s.clock.Now().UnixNano()})
	must.NoError(t, err)

	job.TaskGroups[0].Count = 2
	job.TaskGroups[0].Tasks[0].Config = map[string]any{"run_for": "1m"}
	resp := plan(t, s, job)
	g := resp.Diff.TaskGroups[0]
	var count *structs.FieldDiff
	for _, f := range g.Fields {
		if f.Name == "Count" {
			count = f
		}
	}
	must.NotNil(t, count)
	must.Eq(t, []string{"forces create"}, count.Annotations)
	must.Eq(t, 1, resp.Annotations.DesiredTGUpdates["web"].DestructiveUpdate)
	must.Eq(t, []string{"forces create/destroy update"}, g.Tasks[0].Annotations)
}

// The lifecycle endpoints refuse a namespace that does not exist rather
// than answer as if it were empty, as the other job endpoints do.
func TestJob_Lifecycle_UnknownNamespace(t *testing.T) {
	s := lifecycleServer(t)
	missing := structs.WriteRequest{Namespace: "nowhere"}
	var versions structs.JobVersionsResponse
	err := s.RPC("Job.GetJobVersions", &structs.JobVersionsRequest{JobID: "x", QueryOptions: structs.QueryOptions{Namespace: "nowhere"}}, &versions)
	must.ErrorContains(t, err, `namespace "nowhere" does not exist`)
	var reg structs.JobRegisterResponse
	err = s.RPC("Job.Revert", &structs.JobRevertRequest{JobID: "x", WriteRequest: missing}, &reg)
	must.ErrorContains(t, err, `namespace "nowhere" does not exist`)
	count := int64(1)
	err = s.RPC("Job.Scale", &structs.JobScaleRequest{JobID: "x", Count: &count,
		Target: map[string]string{structs.ScalingTargetGroup: "web"}, WriteRequest: missing}, &reg)
	must.ErrorContains(t, err, `namespace "nowhere" does not exist`)
	job := mock.Job()
	job.Namespace = "nowhere"
	var plan structs.JobPlanResponse
	err = s.RPC("Job.Plan", &structs.JobPlanRequest{Job: job}, &plan)
	must.ErrorContains(t, err, `namespace "nowhere" does not exist`)
}
