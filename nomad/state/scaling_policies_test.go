package state

import (
	"testing"

	"github.com/hashicorp/go-memdb"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// TestScalingPolicies_FollowTheJob checks that a group's policy is listed
// and found by ID once its job is written, keeps its ID when the job gets
// a new version (the autoscaler tracks it by ID), fires watches on the
// jobs table (blocking queries), and goes with its group and its job.
func TestScalingPolicies_FollowTheJob(t *testing.T) {
	s := testStateStore(t)
	job := mock.Job()
	job.TaskGroups[0].Scaling = &structs.ScalingPolicy{Min: 1, Max: 5, Enabled: true}
	must.NoError(t, s.UpsertJob(100, 0, job))

	list, err := s.ScalingPolicies(nil, job.Namespace)
	must.NoError(t, err)
	must.Len(t, 1, list)
	id := list[0].ID
	must.Eq(t, job.ID, list[0].JobID())
	got, err := s.ScalingPolicyByID(nil, id)
	must.NoError(t, err)
	must.Eq(t, 100, got.CreateIndex)

	ws := memdb.NewWatchSet()
	_, err = s.ScalingPolicyByID(ws, id)
	must.NoError(t, err)
	v2 := job.Copy()
	v2.TaskGroups[0].Scaling.ID = ""
	v2.TaskGroups[0].Scaling.Max = 9
	must.NoError(t, s.UpsertJob(110, 0, v2))
	watchFired(t, ws)
	got, err = s.ScalingPolicyByID(nil, id)
	must.NoError(t, err)
	must.Eq(t, 9, got.Max)
	must.Eq(t, 100, got.CreateIndex)
	must.Eq(t, 110, got.ModifyIndex)

	other, err := s.ScalingPolicies(nil, "other")
	must.NoError(t, err)
	must.SliceEmpty(t, other)
	all, err := s.ScalingPolicies(nil, AllNamespaces)
	must.NoError(t, err)
	must.Len(t, 1, all)

	v3 := v2.Copy()
	v3.TaskGroups[0].Scaling = nil
	must.NoError(t, s.UpsertJob(120, 0, v3))
	got, err = s.ScalingPolicyByID(nil, id)
	must.NoError(t, err)
	must.Nil(t, got)

	must.NoError(t, s.UpsertJob(130, 0, v2.Copy()))
	must.NoError(t, s.DeleteJob(140, job.Namespace, job.ID))
	list, err = s.ScalingPolicies(nil, AllNamespaces)
	must.NoError(t, err)
	must.SliceEmpty(t, list)
}
