package state

import (
	"errors"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

func poolNames(t *testing.T, s *StateStore) []string {
	t.Helper()
	iter, err := s.NodePoolsByNamePrefix(nil, "")
	must.NoError(t, err)
	var out []string
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		out = append(out, raw.(*structs.NodePool).Name)
	}
	return out
}

// Every cluster has "all" and "default" with upstream's descriptions, and
// neither can be changed or deleted: jobs and nodes rely on them.
func TestNodePools_BuiltIns(t *testing.T) {
	s := testStateStore(t)
	must.Eq(t, []string{"all", "default"}, poolNames(t, s))
	p, err := s.NodePoolByName(nil, "all")
	must.NoError(t, err)
	must.Eq(t, structs.NodePoolAllDescription, p.Description)

	err = s.UpsertNodePools(5, []*structs.NodePool{{Name: "default", Description: "mine"}})
	must.True(t, errors.Is(err, structs.ErrInvalidRequest))
	err = s.DeleteNodePools(5, []string{"all"})
	must.ErrorContains(t, err, `deleting node pool "all" is not allowed`)
}

// Upsert keeps CreateIndex; a node registering in a pool nobody created
// creates it (a client's config is enough to start a pool, as upstream).
func TestNodePools_UpsertAndNodeCreatesPool(t *testing.T) {
	s := testStateStore(t)
	must.NoError(t, s.UpsertNodePools(5, []*structs.NodePool{{Name: "edge", Description: "a"}}))
	must.NoError(t, s.UpsertNodePools(6, []*structs.NodePool{{Name: "edge", Description: "b",
		Disconnect: &structs.NodePoolDisconnect{LostAfter: time.Hour}}}))
	p, err := s.NodePoolByName(nil, "edge")
	must.NoError(t, err)
	must.Eq(t, uint64(5), p.CreateIndex)
	must.Eq(t, uint64(6), p.ModifyIndex)
	must.Eq(t, time.Hour, p.Disconnect.LostAfter)

	n := mock.Node()
	n.NodePool = "lab"
	must.NoError(t, s.UpsertNode(7, n))
	must.Eq(t, []string{"all", "default", "edge", "lab"}, poolNames(t, s))
	nodes, err := s.NodesByNodePool(nil, "lab")
	must.NoError(t, err)
	must.Len(t, 1, nodes)
	all, err := s.NodesByNodePool(nil, "all")
	must.NoError(t, err)
	must.Len(t, 1, all)
}

// Deleting a pool that still has nodes or live jobs is refused naming
// them, so an operator knows what to move; once they are gone it works.
func TestNodePools_DeleteInUse(t *testing.T) {
	s := testStateStore(t)
	must.NoError(t, s.UpsertNodePools(5, []*structs.NodePool{{Name: "edge"}}))
	n := mock.Node()
	n.NodePool = "edge"
	must.NoError(t, s.UpsertNode(6, n))
	job := mock.Job()
	job.NodePool = "edge"
	must.NoError(t, s.UpsertJob(7, 0, job))

	err := s.DeleteNodePools(8, []string{"edge"})
	must.True(t, errors.Is(err, structs.ErrInvalidRequest))
	must.ErrorContains(t, err, "nodes: "+n.ID)
	must.ErrorContains(t, err, "non-terminal jobs: default/"+job.ID)

	must.NoError(t, s.DeleteNode(9, []string{n.ID}))
	stopped := job.Copy()
	stopped.Stop = true
	must.NoError(t, s.UpsertJob(10, 0, stopped))
	jobs, err := s.JobsByNodePool(nil, "edge")
	must.NoError(t, err)
	must.Len(t, 1, jobs)
	must.Eq(t, structs.JobStatusDead, jobs[0].Status, must.Sprint("a stopped job without allocations is dead"))
	must.NoError(t, s.DeleteNodePools(11, []string{"edge"}))
	err = s.DeleteNodePools(12, []string{"edge"})
	must.True(t, errors.Is(err, structs.ErrUnknownNodePool))
}

// Pools survive a raft snapshot cycle with their disconnect policy.
func TestNodePools_SnapshotRestore(t *testing.T) {
	s := testStateStore(t)
	must.NoError(t, s.UpsertNodePools(5, []*structs.NodePool{{Name: "edge", Meta: map[string]string{"link": "lte"},
		Disconnect: &structs.NodePoolDisconnect{LostAfter: time.Hour, Reconcile: structs.ReconcileOptionKeepOriginal}}}))
	restored := persistAndRestore(t, s)
	must.Eq(t, []string{"all", "default", "edge"}, poolNames(t, restored))
	p, err := restored.NodePoolByName(nil, "edge")
	must.NoError(t, err)
	must.Eq(t, "lte", p.Meta["link"])
	must.Eq(t, structs.ReconcileOptionKeepOriginal, p.Disconnect.Reconcile)
}

// A snapshot from before pools were stored restores the pools its nodes
// name, so jobs can still be registered into them after an upgrade.
func TestNodePools_RestoreOldSnapshotMakesNodePools(t *testing.T) {
	fresh := testStateStore(t)
	r, err := fresh.Restore()
	must.NoError(t, err)
	n := mock.Node()
	n.NodePool = "edge"
	n.CreateIndex = 7
	must.NoError(t, r.NodeRestore(n))
	must.NoError(t, r.Commit())
	p, err := fresh.NodePoolByName(nil, "edge")
	must.NoError(t, err)
	must.NotNil(t, p)
	must.Eq(t, uint64(7), p.CreateIndex)
}
