package nomad

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// A node that registers as ready, or becomes ready, gets one node-update
// evaluation per running system and sysbatch job, though none has an
// allocation there; service jobs and stopped system jobs get none.
func TestNode_ReadyCreatesSystemJobEvals(t *testing.T) {
	s := testServer(t, func(c *Config) { c.NumSchedulers = 0 })
	register := func(job *structs.Job) *structs.Job {
		job.TaskGroups[0].Count = 1
		job.TaskGroups[0].ReschedulePolicy = nil
		var resp structs.JobRegisterResponse
		must.NoError(t, s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &resp))
		return job
	}
	system := mock.Job()
	system.Type = structs.JobTypeSystem
	system = register(system)
	sysbatch := mock.Job()
	sysbatch.Type = structs.JobTypeSysBatch
	sysbatch = register(sysbatch)
	register(mock.Job())
	stopped := mock.Job()
	stopped.Type = structs.JobTypeSystem
	stopped = register(stopped)
	var dresp structs.JobDeregisterResponse
	must.NoError(t, s.RPC("Job.Deregister", &structs.JobDeregisterRequest{JobID: stopped.ID, WriteRequest: structs.WriteRequest{Namespace: stopped.Namespace}}, &dresp))

	jobsOf := func(ids []string) map[string]bool {
		out := map[string]bool{}
		for _, id := range ids {
			e, err := s.State().EvalByID(nil, id)
			must.NoError(t, err)
			must.Eq(t, structs.EvalTriggerNodeUpdate, e.TriggeredBy)
			out[e.JobID] = true
		}
		return out
	}
	want := map[string]bool{system.ID: true, sysbatch.ID: true}

	node := mock.Node()
	var resp structs.NodeUpdateResponse
	must.NoError(t, s.RPC("Node.Register", &structs.NodeRegisterRequest{Node: node}, &resp))
	must.Eq(t, want, jobsOf(resp.EvalIDs))

	// A worker takes those: a node-update evaluation of the same job still
	// waiting would see the next node too, and none would be written.
	for {
		e, token, err := s.evalBroker.Dequeue([]string{structs.JobTypeService, structs.JobTypeSystem, structs.JobTypeSysBatch}, time.Nanosecond)
		must.NoError(t, err)
		if e == nil {
			break
		}
		must.NoError(t, s.evalBroker.Ack(e.ID, token))
	}

	late := mock.Node()
	late.Status = structs.NodeStatusInit
	must.NoError(t, s.RPC("Node.Register", &structs.NodeRegisterRequest{Node: late}, &resp))
	must.SliceEmpty(t, resp.EvalIDs, must.Sprint("an initializing node runs nothing yet"))
	must.NoError(t, s.RPC("Node.UpdateStatus", &structs.NodeUpdateStatusRequest{
		NodeID: late.ID, Status: structs.NodeStatusReady, WriteRequest: structs.WriteRequest{AuthToken: late.SecretID},
	}, &resp))
	must.Eq(t, want, jobsOf(resp.EvalIDs))
}
