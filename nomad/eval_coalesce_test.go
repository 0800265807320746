package nomad

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// The broker tells whether an evaluation of a job with a trigger still
// waits for a worker (ready, or behind the job's owner) and counts the
// job's dequeues: what lets a batch leave its evaluation to the waiting
// one and know afterwards whether a worker took it too early.
func TestEvalBroker_JobWaiting(t *testing.T) {
	b := testBroker(t, testBrokerConfig())
	key := structs.NamespacedID{Namespace: structs.DefaultNamespace, ID: "web"}
	first := evalFor("web", 50, 10)
	trigger := first.TriggeredBy
	waiting, n := b.JobWaiting(key, trigger)
	must.False(t, waiting)
	must.Eq(t, 0, n)

	b.Enqueue(first)
	waiting, n = b.JobWaiting(key, trigger)
	must.True(t, waiting, must.Sprint("ready"))
	must.Eq(t, 0, n)
	waiting, _ = b.JobWaiting(key, structs.EvalTriggerReconnect)
	must.False(t, waiting, must.Sprint("not with another trigger"))

	_, token := mustDequeue(t, b)
	waiting, n = b.JobWaiting(key, trigger)
	must.False(t, waiting, must.Sprint("the only evaluation is with a worker"))
	must.Eq(t, 1, n)

	b.Enqueue(evalFor("web", 50, 11))
	waiting, _ = b.JobWaiting(key, trigger)
	must.True(t, waiting, must.Sprint("behind the job's owner"))
	must.NoError(t, b.Ack(first.ID, token))
	waiting, n = b.JobWaiting(key, trigger)
	must.True(t, waiting, must.Sprint("ready once the owner is acked"))
	must.Eq(t, 1, n)

	b.SetEnabled(false)
	waiting, _ = b.JobWaiting(key, trigger)
	must.False(t, waiting, must.Sprint("a disabled broker holds nothing"))
	must.Eq(t, 1, b.JobDequeues(key), must.Sprint("the count survives a leadership change"))
}

// A node-update or reconnect evaluation for a job whose evaluation of the
// same trigger is still waiting in the broker is not written: the waiting
// one will see the change. But if a worker took an evaluation of the job
// before the change was applied, the batch's own evaluation follows: a
// node's change is never left unevaluated. Other triggers are always
// written.
func TestCoalesceWaiting_FollowsUpWhenTakenEarly(t *testing.T) {
	s := testServer(t, func(c *Config) { c.NumSchedulers = 0 })
	job := mock.Job()
	var reg structs.JobRegisterResponse
	must.NoError(t, s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &reg))
	stored, err := s.State().JobByID(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	now := s.clock.Now()
	// A node-update evaluation waits behind the registration's.
	_, _, err = s.raftApply(structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{
		Evals: []*structs.Evaluation{stored.NewEval(structs.EvalTriggerNodeUpdate, now)}})
	must.NoError(t, err)

	nodeUpdate := stored.NewEval(structs.EvalTriggerNodeUpdate, now)
	retry := stored.NewEval(structs.EvalTriggerRetryFailedAlloc, now)
	reconnect := stored.NewEval(structs.EvalTriggerReconnect, now)
	write, relied := s.coalesceWaiting([]*structs.Evaluation{nodeUpdate, retry, reconnect})
	must.Eq(t, []*structs.Evaluation{retry, reconnect}, write)
	must.Len(t, 1, relied)
	late := s.followUpRelied(relied)
	must.SliceEmpty(t, late, must.Sprint("no worker took an evaluation of the job"))

	// A worker takes one between the decision and the commit.
	write, relied = s.coalesceWaiting([]*structs.Evaluation{nodeUpdate})
	must.SliceEmpty(t, write)
	taken, _, err := s.evalBroker.Dequeue([]string{structs.JobTypeService}, time.Second)
	must.NoError(t, err)
	must.Eq(t, reg.EvalID, taken.ID)
	late = s.followUpRelied(relied)
	must.Eq(t, []*structs.Evaluation{nodeUpdate}, late)
	written, err := s.State().EvalByID(nil, nodeUpdate.ID)
	must.NoError(t, err)
	must.NotNil(t, written)
	must.Eq(t, structs.EvalStatusPending, written.Status)
}
