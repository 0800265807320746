package state

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

func testStateStore(t must.T) *StateStore {
	t.Helper()
	s, err := NewStateStore(nil)
	must.NoError(t, err)
	return s
}

// watchFired fails unless one of ws's channels has fired. The channels are
// closed when the write commits, so the deadline only bounds a bug.
func watchFired(t *testing.T, ws memdb.WatchSet) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	must.NoError(t, ws.WatchCtx(ctx), must.Sprint("watch set should have fired"))
}

// watchNotFired fails if any of ws's channels has fired. Writes notify
// watchers synchronously inside Commit, so checking without waiting is exact.
func watchNotFired(t *testing.T, ws memdb.WatchSet) {
	t.Helper()
	for ch := range ws {
		select {
		case <-ch:
			t.Fatalf("watch set fired but nothing it watches changed")
		default:
		}
	}
}

// jobWithAllocs stores a job (at index) and n pending allocations of its
// first group (at index+1), on node nodeID. It returns the stored job and
// allocations; their Job pointers are the job.
func jobWithAllocs(t must.T, s *StateStore, index uint64, job *structs.Job, nodeID string, n int) []*structs.Allocation {
	t.Helper()
	must.NoError(t, s.UpsertJob(index, 0, job))
	allocs := make([]*structs.Allocation, n)
	for i := range allocs {
		a := mock.Alloc()
		a.Job = job
		a.JobID = job.ID
		a.Namespace = job.Namespace
		a.TaskGroup = job.TaskGroups[0].Name
		a.Name = structs.AllocName(job.ID, a.TaskGroup, uint(i))
		a.NodeID = nodeID
		allocs[i] = a
	}
	if n > 0 {
		must.NoError(t, s.UpsertAllocs(index+1, allocs))
	}
	return allocs
}

// clientUpdate is what a client sends for one allocation.
func clientUpdate(id, status string) *structs.Allocation {
	return &structs.Allocation{ID: id, ClientStatus: status, ClientDescription: "client says " + status}
}

func summaryOf(t must.T, s *StateStore, job *structs.Job) structs.TaskGroupSummary {
	t.Helper()
	sum, err := s.JobSummaryByID(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	must.NotNil(t, sum)
	return sum.Summary[job.TaskGroups[0].Name]
}

func jobStatus(t must.T, s *StateStore, job *structs.Job) string {
	t.Helper()
	out, err := s.JobByID(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	must.NotNil(t, out)
	return out.Status
}

func allocByID(t must.T, s *StateStore, id string) *structs.Allocation {
	t.Helper()
	out, err := s.AllocByID(nil, id)
	must.NoError(t, err)
	must.NotNil(t, out)
	return out
}

func drain[T any](t must.T, iter memdb.ResultIterator) []T {
	t.Helper()
	var out []T
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		out = append(out, raw.(T))
	}
	return out
}

func ids[T interface {
	*structs.Allocation | *structs.Evaluation | *structs.Node | *structs.Job
}](objs []T) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		switch v := any(o).(type) {
		case *structs.Allocation:
			out = append(out, v.ID)
		case *structs.Evaluation:
			out = append(out, v.ID)
		case *structs.Node:
			out = append(out, v.ID)
		case *structs.Job:
			out = append(out, v.ID)
		}
	}
	return out
}
