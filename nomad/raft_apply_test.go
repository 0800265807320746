package nomad

import (
	"sync"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// Concurrent raft applies, which raft takes into one batch (one log write,
// one fsync with raft on disk), each get their own answer: their own log
// index, and the FSM's error of their own entry only. A registration into
// a namespace that does not exist fails for its caller alone, and the
// others of its batch are written at the index each was told.
func TestRaftApply_ConcurrentCallersGetTheirOwnResult(t *testing.T) {
	s := testServer(t, nil)
	const callers = 48
	type result struct {
		index uint64
		err   error
	}
	results := make([]result, callers)
	jobs := make([]*structs.Job, callers)
	var start, done sync.WaitGroup
	start.Add(1)
	for i := range callers {
		job := mock.Job()
		if i%5 == 0 {
			job.Namespace = "nowhere"
		}
		jobs[i] = job
		done.Add(1)
		go func() {
			defer done.Done()
			start.Wait()
			_, index, err := s.raftApply(structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: job})
			results[i] = result{index, err}
		}()
	}
	start.Done()
	done.Wait()
	seen := map[uint64]bool{}
	for i, r := range results {
		must.Positive(t, r.index, must.Sprintf("caller %d", i))
		must.False(t, seen[r.index], must.Sprintf("caller %d: index %d given twice", i, r.index))
		seen[r.index] = true
		if jobs[i].Namespace == "nowhere" {
			must.ErrorIs(t, r.err, structs.ErrInvalidRequest, must.Sprintf("caller %d", i))
			continue
		}
		must.NoError(t, r.err, must.Sprintf("caller %d", i))
		got, err := s.State().JobByID(nil, jobs[i].Namespace, jobs[i].ID)
		must.NoError(t, err)
		must.NotNil(t, got, must.Sprintf("caller %d's job", i))
		must.Eq(t, r.index, got.ModifyIndex, must.Sprintf("caller %d's job is written at the index it was told", i))
	}
}
