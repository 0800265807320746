package nomad

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// scaleTo asks Job.Scale for a new count of job's "web" group.
func scaleTo(s *Server, job *structs.Job, count int64, override bool) error {
	var resp structs.JobRegisterResponse
	return s.RPC("Job.Scale", &structs.JobScaleRequest{JobID: job.ID, Count: &count, PolicyOverride: override,
		Target:       map[string]string{structs.ScalingTargetGroup: "web"},
		WriteRequest: structs.WriteRequest{Namespace: job.Namespace}}, &resp)
}

// groupScaleStatus reads the scale status of job's "web" group.
func groupScaleStatus(t *testing.T, s *Server, job *structs.Job) *structs.TaskGroupScaleStatus {
	t.Helper()
	var status structs.JobScaleStatusResponse
	must.NoError(t, s.RPC("Job.ScaleStatus", &structs.JobSpecificRequest{JobID: job.ID,
		QueryOptions: structs.QueryOptions{Namespace: job.Namespace}}, &status))
	return status.JobScaleStatus.TaskGroups["web"]
}

// A scale request outside the group's scaling policy is refused in
// upstream's words, PolicyOverride or not (as upstream): the bounds are
// part of the job.
func TestJob_Scale_PolicyBounds(t *testing.T) {
	s := lifecycleServer(t)
	job := mock.Job()
	job.TaskGroups[0].Scaling = &structs.ScalingPolicy{Min: 2, Max: 12, Enabled: true}
	register(t, s, job)

	err := scaleTo(s, job, 1, false)
	must.ErrorIs(t, err, structs.ErrInvalidRequest)
	must.ErrorContains(t, err, "group count was less than scaling policy minimum: 1 < 2")
	must.ErrorContains(t, scaleTo(s, job, 13, true), "group count was greater than scaling policy maximum: 13 > 12")
	must.NoError(t, scaleTo(s, job, 12, false))
	must.NoError(t, scaleTo(s, job, 2, false))
}

// groupAllocs stores allocations of job's "web" group: running ones,
// unknown ones (node disconnected) and reconnecting ones (running again,
// reconnect not yet resolved).
func groupAllocs(t *testing.T, s *Server, job *structs.Job, index uint64, running, unknown, reconnecting int) {
	t.Helper()
	cur, err := s.State().JobByID(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	var allocs []*structs.Allocation
	add := func(n int, status string, lastState string) {
		for range n {
			a := mock.Alloc()
			a.Job, a.JobID, a.Namespace = cur, cur.ID, cur.Namespace
			a.ClientStatus = status
			if lastState != "" {
				a.AllocStates = []*structs.AllocState{{Field: structs.AllocStateFieldClientStatus, Value: lastState, Time: s.clock.Now()}}
			}
			allocs = append(allocs, a)
		}
	}
	add(running, structs.AllocClientStatusRunning, "")
	add(unknown, structs.AllocClientStatusUnknown, structs.AllocClientStatusUnknown)
	add(reconnecting, structs.AllocClientStatusRunning, structs.AllocClientStatusUnknown)
	must.NoError(t, s.State().UpsertAllocs(index, allocs))
}

// While allocations of a group are unknown, a count below the current one
// is refused (an autoscaler reading Running would shrink a group whose
// load is real) without an event (the autoscaler retries every interval),
// and the scale status says why; a higher count and an operator's
// PolicyOverride still go through.
func TestJob_Scale_RefusedWhileUnknown(t *testing.T) {
	s := lifecycleServer(t)
	job := mock.Job()
	job.TaskGroups[0].Count = 5
	register(t, s, job)
	groupAllocs(t, s, job, 1000, 3, 2, 0)

	st := groupScaleStatus(t, s, job)
	must.Eq(t, 3, st.Running)
	must.Eq(t, 2, st.Unknown)
	must.StrContains(t, st.Unstable, "2 allocations unknown (node disconnected)")

	err := scaleTo(s, job, 4, false)
	must.ErrorIs(t, err, structs.ErrScalingUnstable)
	must.ErrorIs(t, err, structs.ErrInvalidRequest, must.Sprint("a 400, as the deployment refusal"))
	must.ErrorIs(t, structs.RPCError(err.Error()), structs.ErrScalingUnstable, must.Sprint("survives a forward"))
	must.StrContains(t, err.Error(), "group count 4 would lower 5 while 2 allocations unknown")
	st = groupScaleStatus(t, s, job)
	must.Eq(t, 5, st.Desired, must.Sprint("nothing registered"))
	must.SliceEmpty(t, st.Events, must.Sprint("no raft write per refused retry"))

	must.NoError(t, scaleTo(s, job, 6, false))
	must.NoError(t, scaleTo(s, job, 4, true))
}

// While a reconnect is unresolved and the group runs more than its count,
// neither a lower nor a higher count is taken (a "scale in" computed from
// the inflated Running would raise the count); once resolved, scaling
// works again.
func TestJob_Scale_RefusedWhileReconnecting(t *testing.T) {
	s := lifecycleServer(t)
	job := mock.Job()
	job.TaskGroups[0].Count = 5
	register(t, s, job)
	groupAllocs(t, s, job, 1000, 5, 0, 2)

	st := groupScaleStatus(t, s, job)
	must.Eq(t, 7, st.Running)
	must.Eq(t, 2, st.Reconnecting)
	must.StrContains(t, st.Unstable, "2 allocations reconnecting")

	err := scaleTo(s, job, 6, false)
	must.ErrorIs(t, err, structs.ErrScalingUnstable)
	must.StrContains(t, err.Error(), "group count 6 would raise 5")
	must.ErrorIs(t, scaleTo(s, job, 4, false), structs.ErrScalingUnstable)
	must.NoError(t, scaleTo(s, job, 6, true))
}

// The scale status of a stable group names no reason, and scaling in
// either direction is allowed.
func TestJob_Scale_StableGroup(t *testing.T) {
	s := lifecycleServer(t)
	job := mock.Job()
	job.TaskGroups[0].Count = 3
	register(t, s, job)
	groupAllocs(t, s, job, 1000, 3, 0, 0)
	must.Eq(t, "", groupScaleStatus(t, s, job).Unstable)
	must.NoError(t, scaleTo(s, job, 2, false))
	must.NoError(t, scaleTo(s, job, 4, false))
}

// Scaling policies are read with list-scaling-policies / read-scaling-policy
// or read-job, as upstream; a token without them is refused naming the
// capability, and a list across namespaces drops what it may not read.
func TestScaling_ACL(t *testing.T) {
	s, mgmt := aclServer(t)
	job := mock.Job()
	job.TaskGroups[0].Scaling = &structs.ScalingPolicy{Min: 1, Max: 20, Enabled: true}
	must.NoError(t, s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job.Copy(),
		WriteRequest: structs.WriteRequest{AuthToken: mgmt.SecretID}}, &structs.JobRegisterResponse{}))

	scaler := clientToken(t, s, mgmt, `namespace "default" { capabilities = ["list-scaling-policies", "read-scaling-policy"] }`)
	other := clientToken(t, s, mgmt, `namespace "default" { capabilities = ["submit-job"] }`)
	list := func(secret, ns string) (*structs.ScalingPolicyListResponse, error) {
		var resp structs.ScalingPolicyListResponse
		err := s.RPC("Scaling.ListPolicies", &structs.ScalingPolicyListRequest{QueryOptions: structs.QueryOptions{AuthToken: secret, Namespace: ns}}, &resp)
		return &resp, err
	}
	resp, err := list(scaler.SecretID, "")
	must.NoError(t, err)
	must.Len(t, 1, resp.Policies)
	id := resp.Policies[0].ID
	_, err = list(other.SecretID, "")
	must.ErrorIs(t, err, structs.ErrPermissionDenied)
	must.ErrorContains(t, err, `list-scaling-policies in namespace "default"`)
	resp, err = list(other.SecretID, "*")
	must.NoError(t, err)
	must.SliceEmpty(t, resp.Policies)

	get := func(secret string) error {
		var out structs.SingleScalingPolicyResponse
		return s.RPC("Scaling.GetPolicy", &structs.ScalingPolicySpecificRequest{ID: id,
			QueryOptions: structs.QueryOptions{AuthToken: secret}}, &out)
	}
	must.NoError(t, get(scaler.SecretID))
	err = get(other.SecretID)
	must.ErrorIs(t, err, structs.ErrPermissionDenied)
	must.ErrorContains(t, err, `read-scaling-policy in namespace "default"`)
}
