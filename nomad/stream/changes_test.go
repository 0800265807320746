package stream

import (
	"testing"

	"github.com/hashicorp/go-memdb"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// What each kind of change becomes: a purged job is a JobDeregistered
// event marked Deleted; a deleted node a NodeDeregistration; evaluations
// and allocations removed by garbage collection, job summaries and the
// index table nothing; an object written twice by one entry one event, as
// it ended up. Consumers count on one event per object and entry.
func TestFromEntry(t *testing.T) {
	job := &structs.Job{ID: "web", Namespace: "default"}
	stopped := &structs.Job{ID: "web", Namespace: "default", Stop: true}
	node := &structs.Node{ID: "n1", SecretID: "secret"}
	alloc := &structs.Allocation{ID: "a1", JobID: "web", Namespace: "default", Job: job}
	eval := &structs.Evaluation{ID: "e1", JobID: "web", Namespace: "default"}

	got := FromEntry(structs.JobDeregisterRequestType, 9, memdb.Changes{
		{Table: "jobs", Before: job},
		{Table: "evals", After: eval},
		{Table: "job_summary", After: &structs.JobSummary{JobID: "web"}},
		{Table: "index", After: "whatever"},
	})
	must.Eq(t, 9, got.Index)
	must.SliceLen(t, 2, got.Events)
	must.Eq(t, Event{Topic: TopicJob, Type: TypeJobDeregistered, Key: "web", Namespace: "default", Index: 9,
		Payload: Payload{Job: job, Deleted: true}}, got.Events[0])
	must.Eq(t, Event{Topic: TopicEvaluation, Type: TypeJobDeregistered, Key: "e1", Namespace: "default", Index: 9,
		FilterKeys: []string{"web"}, Payload: Payload{Evaluation: eval}}, got.Events[1])

	gc := FromEntry(structs.EvalDeleteRequestType, 10, memdb.Changes{{Table: "evals", Before: eval}, {Table: "allocs", Before: alloc}})
	must.SliceEmpty(t, gc.Events)

	twice := FromEntry(structs.JobRegisterRequestType, 11, memdb.Changes{
		{Table: "jobs", After: job}, {Table: "allocs", After: alloc}, {Table: "jobs", Before: job, After: stopped},
	})
	must.SliceLen(t, 2, twice.Events)
	must.Eq(t, stopped, twice.Events[0].Payload.Job)
	must.Nil(t, twice.Events[1].Payload.Allocation.Job, must.Sprint("an allocation event leaves its job out"))
	must.NotNil(t, alloc.Job, must.Sprint("the stored allocation keeps it"))

	gone := FromEntry(structs.NodePurgeRequestType, 12, memdb.Changes{{Table: "nodes", Before: node}})
	must.Eq(t, TypeNodeDeregistration, gone.Events[0].Type)
	must.Eq(t, "", gone.Events[0].Payload.Node.SecretID)

	must.Eq(t, TypeJobDeregistered, FromWrite(13, memdb.Changes{{Table: "jobs", After: stopped}}).Events[0].Type,
		must.Sprint("a write outside raft is typed by what it did"))
}
