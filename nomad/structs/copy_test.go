package structs_test

import (
	"reflect"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// Objects read from the state store are shared and immutable, and callers
// Copy before they change them. A Copy that shares any nested map, slice or
// pointer lets a scheduler or endpoint silently rewrite stored state (and
// race with every other reader), so each test below builds a fixture with
// every field set, copies it, changes every value reachable from the copy,
// and checks the original still equals a freshly built fixture.

func checkDeepCopy[T any](t *testing.T, build func() T, copyFn func(T) T, skip ...string) {
	t.Helper()
	orig, want := build(), build()
	mustFill(t, orig)
	c := copyFn(orig)
	must.Eq(t, want, c, must.Sprint("the copy must start equal to its original"))
	skipSet := map[string]bool{}
	for _, s := range skip {
		skipSet[s] = true
	}
	scribble(reflect.ValueOf(c), skipSet)
	must.NotEq(t, want, c, must.Sprint("scribble must have changed the copy, or this test checks nothing"))
	must.Eq(t, want, orig, must.Sprint("changing the copy changed the original: it shares memory"))
}

// Job.Copy must share nothing with the original, down to task config
// values, because the scheduler and endpoints edit copies of stored jobs.
func TestJob_Copy_SharesNothing(t *testing.T) {
	checkDeepCopy(t, fullJob, (*structs.Job).Copy)
}

// TaskGroup.Copy must deep-copy the disconnect fields (pointers) and every
// policy, since a group copy is edited when a job is canonicalized or updated.
func TestTaskGroup_Copy_SharesNothing(t *testing.T) {
	checkDeepCopy(t, func() *structs.TaskGroup { return fullTaskGroup("web") }, (*structs.TaskGroup).Copy)
}

// Task.Copy must deep-copy Config in every shape the codebase produces: the
// msgpack shapes ([]any, map[string]any) and the job file parser's shapes
// ([]string and []map[string]any for repeated blocks such as mount {}).
func TestTask_Copy_SharesNothing(t *testing.T) {
	build := func() *structs.Task {
		task := fullTask("web")
		task.Config["volumes"] = []string{"/a:/a", "/b:/b"}
		task.Config["port_map"] = []map[string]any{{"http": int64(8080), "tags": []any{"x"}}}
		return task
	}
	checkDeepCopy(t, build, (*structs.Task).Copy)
}

// Allocation.Copy must share nothing but its Job (shared by design: jobs are
// immutable once stored), because the reconciler edits copies of stored
// allocations when it marks them unknown, lost or stopped.
func TestAllocation_Copy_SharesNothingButJob(t *testing.T) {
	checkDeepCopy(t, fullAlloc, (*structs.Allocation).Copy, "Allocation.Job")

	orig := fullAlloc()
	must.True(t, orig.Copy().Job == orig.Job, must.Sprint("Copy keeps the job pointer: the job is immutable and large"))
}

// CopySkipJob drops only the copy's job: plans carry the job once, and the
// original allocation must keep its own.
func TestAllocation_CopySkipJob(t *testing.T) {
	orig := fullAlloc()
	c := orig.CopySkipJob()
	must.Nil(t, c.Job)
	must.NotNil(t, orig.Job)
	c.Job = orig.Job
	must.Eq(t, orig, c)
	must.Nil(t, (*structs.Allocation)(nil).CopySkipJob())
}

// Node.Copy must share nothing, including driver info and events, because
// heartbeats and status updates edit copies of stored nodes.
func TestNode_Copy_SharesNothing(t *testing.T) {
	checkDeepCopy(t, fullNode, (*structs.Node).Copy)
}

// Evaluation.Copy must share nothing, since the broker and workers update
// status fields on copies of evaluations that other readers still hold.
func TestEvaluation_Copy_SharesNothing(t *testing.T) {
	checkDeepCopy(t, fullEval, (*structs.Evaluation).Copy)
}

// JobSummary.Copy must share nothing: the state store recounts summaries
// on copies while blocking queries read the stored one.
func TestJobSummary_Copy_SharesNothing(t *testing.T) {
	checkDeepCopy(t, fullSummary, (*structs.JobSummary).Copy)
}

// A copy of a job, sparse or full, is reflect.DeepEqual to it (nil stays
// nil): the state store decides whether a registration is a new job version
// with reflect.DeepEqual, so a copy that turned nil into empty would make an
// unchanged job look changed.
func TestJob_Copy_DeepEqualToOriginal(t *testing.T) {
	sparse := &structs.Job{ID: "sparse", TaskGroups: []*structs.TaskGroup{{Name: "g", Tasks: []*structs.Task{{Name: "t"}}}}}
	for _, job := range []*structs.Job{sparse, mock.Job(), fullJob()} {
		must.True(t, reflect.DeepEqual(job, job.Copy()), must.Sprintf("job %s", job.ID))
	}
}

// Copy of nil is nil for every type, so callers can copy optional fields
// without a nil check.
func TestCopy_NilIsNil(t *testing.T) {
	must.Nil(t, (*structs.Job)(nil).Copy())
	must.Nil(t, (*structs.TaskGroup)(nil).Copy())
	must.Nil(t, (*structs.Task)(nil).Copy())
	must.Nil(t, (*structs.Allocation)(nil).Copy())
	must.Nil(t, (*structs.Node)(nil).Copy())
	must.Nil(t, (*structs.Evaluation)(nil).Copy())
	must.Nil(t, (*structs.JobSummary)(nil).Copy())
	must.Nil(t, (*structs.AllocMetric)(nil).Copy())
	must.Nil(t, (*structs.AllocatedResources)(nil).Copy())
	must.Nil(t, (*structs.RescheduleTracker)(nil).Copy())
	must.Nil(t, (*structs.TaskState)(nil).Copy())
	must.Nil(t, (*structs.TaskEvent)(nil).Copy())
	must.Nil(t, (*structs.NodeEvent)(nil).Copy())
	must.Nil(t, (*structs.DriverInfo)(nil).Copy())
	must.Nil(t, (*structs.RestartPolicy)(nil).Copy())
	must.Nil(t, (*structs.ReschedulePolicy)(nil).Copy())
	must.Nil(t, (*structs.DisconnectStrategy)(nil).Copy())
}
