package nomad

import (
	"sync"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// Registrations racing with one check-index: exactly one wins, the others
// are refused and the job is the winner's. The chaos run's history caught
// two registers with cas=1497 both acknowledged (at 1584 and 1585): the
// endpoint's read let both through. In one process the window seldom
// opens, so this passes without the fix too; TestFSM_JobRegister_EnforceIndex
// is the test that fails without it.
func TestJob_Register_EnforceIndexRace(t *testing.T) {
	s := lifecycleServer(t)
	job := mock.Job()
	var resp structs.JobRegisterResponse
	must.NoError(t, s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job.Copy()}, &resp))
	cas := resp.JobModifyIndex

	const racers = 16
	var wg sync.WaitGroup
	errs := make([]error, racers)
	for i := range racers {
		wg.Go(func() {
			j := job.Copy()
			j.Meta = map[string]string{"racer": string(rune('a' + i))}
			var r structs.JobRegisterResponse
			errs[i] = s.RPC("Job.Register", &structs.JobRegisterRequest{Job: j, EnforceIndex: true, JobModifyIndex: cas}, &r)
		})
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		if err == nil {
			must.Eq(t, -1, won, must.Sprintf("racers %d and %d both won check-index %d", won, i, cas))
			won = i
			continue
		}
		must.ErrorContains(t, err, "conflicting job modify index")
	}
	must.NotEq(t, -1, won)
	got, err := s.State().JobByID(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	must.Eq(t, string(rune('a'+won)), got.Meta["racer"])
	must.Eq(t, 1, int(got.Version))
}

// An entry whose check-index no longer holds when the FSM applies it
// writes nothing and answers the endpoint's refusal, on every server.
func TestFSM_JobRegister_EnforceIndex(t *testing.T) {
	f := testFSM(t)
	job := mock.Job()
	applyEntry(t, f, 10, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: job.Copy()})
	first := job.Copy()
	first.Meta = map[string]string{"w": "first"}
	applyEntry(t, f, 11, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: first, EnforceIndex: true, JobModifyIndex: 10})
	second := job.Copy()
	second.Meta = map[string]string{"w": "second"}
	buf, err := structs.Encode(structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: second, EnforceIndex: true, JobModifyIndex: 10})
	must.NoError(t, err)
	resp, _ := f.Apply(&raft.Log{Index: 12, Data: buf}).(error)
	must.ErrorContains(t, resp, "conflicting job modify index: 11")
	got, err := f.State().JobByID(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	must.Eq(t, "first", got.Meta["w"])
}
