package nomad

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// A job stop with NoShutdownDelay (job stop -no-shutdown-delay) marks, in
// the stop's own raft entry, every allocation of the job that is not
// finished to skip shutdown_delay, so that the clients read it on the
// stopped allocations, including one an earlier stop left running on its
// client in its delay; finished ones and other jobs' are left alone.
func TestFSM_JobDeregisterNoShutdownDelay(t *testing.T) {
	f := testFSM(t)
	node := mock.Node()
	applyEntry(t, f, 10, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: node})
	job, other := mock.Job(), mock.Job()
	for i, j := range []*structs.Job{job, other} {
		applyEntry(t, f, uint64(11+i), structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: j})
	}
	live, done, elsewhere := mock.AllocForNode(node), mock.AllocForNode(node), mock.AllocForNode(node)
	stopping := mock.AllocForNode(node)
	live.Job, live.JobID = job, job.ID
	done.Job, done.JobID = job, job.ID
	done.DesiredStatus, done.ClientStatus = structs.AllocDesiredStatusStop, structs.AllocClientStatusComplete
	stopping.Job, stopping.JobID = job, job.ID
	stopping.DesiredStatus, stopping.ClientStatus = structs.AllocDesiredStatusStop, structs.AllocClientStatusRunning
	elsewhere.Job, elsewhere.JobID = other, other.ID
	applyEntry(t, f, 13, structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{
		Job: job, AllocsUpdated: []*structs.Allocation{live, done, stopping, elsewhere}, UpdatedAt: 1})

	applyEntry(t, f, 14, structs.JobDeregisterRequestType, &structs.JobDeregisterRequest{
		JobID: job.ID, NoShutdownDelay: true, WriteRequest: structs.WriteRequest{Namespace: job.Namespace}})

	got := func(id string) *structs.Allocation {
		a, err := f.State().AllocByID(nil, id)
		must.NoError(t, err)
		return a
	}
	must.True(t, got(live.ID).DesiredTransition.ShouldIgnoreShutdownDelay())
	must.True(t, got(stopping.ID).DesiredTransition.ShouldIgnoreShutdownDelay())
	must.False(t, got(done.ID).DesiredTransition.ShouldIgnoreShutdownDelay())
	must.False(t, got(elsewhere.ID).DesiredTransition.ShouldIgnoreShutdownDelay())
	stopped, err := f.State().JobByID(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	must.True(t, stopped.Stop)
}
