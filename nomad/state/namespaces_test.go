package state

import (
	"errors"
	"strings"
	"testing"

	"github.com/shoenig/test/must"
	"pgregory.net/rapid"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// A new store already has the default namespace, so every job submitted
// without a namespace has one to land in; an empty store still reports
// index 0, so blocking queries and snapshots of it are unchanged.
func TestNamespaces_DefaultAlwaysExists(t *testing.T) {
	s := testStateStore(t)
	ns, err := s.NamespaceByName(nil, structs.DefaultNamespace)
	must.NoError(t, err)
	must.NotNil(t, ns)
	must.Eq(t, structs.DefaultNamespaceDescription, ns.Description)
	must.Eq(t, uint64(1), ns.CreateIndex)
	latest, err := s.LatestIndex()
	must.NoError(t, err)
	must.Eq(t, uint64(0), latest)

	err = s.DeleteNamespaces(5, []string{structs.DefaultNamespace})
	must.True(t, errors.Is(err, structs.ErrInvalidRequest))
	must.ErrorContains(t, err, "default namespace cannot be deleted")
	must.NoError(t, s.NamespaceExists(structs.DefaultNamespace))
}

// Upsert keeps CreateIndex and bumps the table index; delete refuses a
// missing name and deletes nothing of a batch that has one.
func TestNamespaces_UpsertDelete(t *testing.T) {
	s := testStateStore(t)
	must.NoError(t, s.UpsertNamespaces(5, []*structs.Namespace{{Name: "fleet", Description: "a"}, {Name: "lab"}}))
	must.NoError(t, s.UpsertNamespaces(6, []*structs.Namespace{{Name: "fleet", Description: "b", Meta: map[string]string{"k": "v"}}}))
	got, err := s.NamespaceByName(nil, "fleet")
	must.NoError(t, err)
	must.Eq(t, "b", got.Description)
	must.Eq(t, uint64(5), got.CreateIndex)
	must.Eq(t, uint64(6), got.ModifyIndex)
	idx, err := s.Index(TableNamespaces)
	must.NoError(t, err)
	must.Eq(t, uint64(6), idx)

	names := drain[*structs.Namespace](t, mustIter(s.NamespacesByNamePrefix(nil, "")))
	must.Eq(t, []string{"default", "fleet", "lab"}, nsNames(names))
	names = drain[*structs.Namespace](t, mustIter(s.NamespacesByNamePrefix(nil, "fl")))
	must.Eq(t, []string{"fleet"}, nsNames(names))

	err = s.DeleteNamespaces(7, []string{"lab", "nope"})
	must.True(t, errors.Is(err, structs.ErrUnknownNamespace))
	must.NoError(t, s.NamespaceExists("lab"), must.Sprint("a failed batch deletes nothing"))
	must.NoError(t, s.DeleteNamespaces(8, []string{"lab"}))
	err = s.NamespaceExists("lab")
	must.True(t, errors.Is(err, structs.ErrInvalidRequest))
	must.ErrorContains(t, err, `namespace "lab" does not exist`)
}

// A namespace holding a job that still runs (or may) cannot be deleted:
// the refusal names the jobs so the operator knows what to stop. Once the
// job is dead the delete goes through.
func TestNamespaces_DeleteRefusedWithLiveJobs(t *testing.T) {
	s := testStateStore(t)
	must.NoError(t, s.UpsertNamespaces(5, []*structs.Namespace{{Name: "fleet"}}))
	job := mock.Job()
	job.Namespace = "fleet"
	must.NoError(t, s.UpsertJob(6, 0, job))
	other := mock.Job()
	other.ID, other.Namespace = "api", "fleet"
	must.NoError(t, s.UpsertJob(7, 0, other))

	err := s.DeleteNamespaces(8, []string{"fleet"})
	must.True(t, errors.Is(err, structs.ErrInvalidRequest))
	must.ErrorContains(t, err, `namespace "fleet" has non-terminal jobs: api, `+job.ID)

	for i, j := range []*structs.Job{job, other} {
		stopped := j.Copy()
		stopped.Stop = true
		must.NoError(t, s.UpsertJob(uint64(9+i), 0, stopped))
	}
	must.NoError(t, s.DeleteNamespaces(11, []string{"fleet"}))
}

// Namespaces survive a snapshot round trip; a snapshot from before
// namespaces existed restores with the default namespace present.
func TestNamespaces_SnapshotRestore(t *testing.T) {
	s := testStateStore(t)
	must.NoError(t, s.UpsertNamespaces(5, []*structs.Namespace{{Name: "fleet", Description: "edge", Meta: map[string]string{"k": "v"}}}))
	restored := persistAndRestore(t, s)
	got, err := restored.NamespaceByName(nil, "fleet")
	must.NoError(t, err)
	must.Eq(t, map[string]string{"k": "v"}, got.Meta)
	idx, err := restored.Index(TableNamespaces)
	must.NoError(t, err)
	must.Eq(t, uint64(5), idx)

	fresh := testStateStore(t)
	r, err := fresh.Restore()
	must.NoError(t, err)
	must.NoError(t, r.NodeRestore(mock.Node()))
	must.NoError(t, r.Commit())
	must.NoError(t, fresh.NamespaceExists(structs.DefaultNamespace))
}

func nsNames(ns []*structs.Namespace) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.Name
	}
	return out
}

// After any sequence of namespace upserts and deletes and of job
// registers and stops, in any order: the default namespace exists, every
// job that is not dead is in a namespace that exists (no live job is
// orphaned by a delete), and a delete succeeds exactly when the model
// says it may.
func TestProperty_NamespacesNeverOrphanLiveJobs(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := testStateStore(t)
		names := []string{"default", "fleet", "lab"}
		exists := map[string]bool{"default": true}
		live := map[string]bool{} // namespace/job of a job that is not dead
		jobsIn := func(ns string) bool {
			for k, v := range live {
				if v && strings.HasPrefix(k, ns+"/") {
					return true
				}
			}
			return false
		}
		index := uint64(10)
		for range rapid.IntRange(1, 40).Draw(t, "steps") {
			index++
			ns := rapid.SampledFrom(names).Draw(t, "ns")
			jobID := rapid.SampledFrom([]string{"a", "b"}).Draw(t, "job")
			switch rapid.IntRange(0, 3).Draw(t, "op") {
			case 0:
				must.NoError(t, s.UpsertNamespaces(index, []*structs.Namespace{{Name: ns}}))
				exists[ns] = true
			case 1:
				err := s.DeleteNamespaces(index, []string{ns})
				mayDelete := ns != structs.DefaultNamespace && exists[ns] && !jobsIn(ns)
				must.Eq(t, mayDelete, err == nil, must.Sprintf("delete %s: %v", ns, err))
				if err == nil {
					exists[ns] = false
				}
			case 2:
				if s.NamespaceExists(ns) != nil {
					continue // the FSM refuses it; the endpoint never sends it
				}
				job := mock.Job()
				job.ID, job.Namespace = jobID, ns
				must.NoError(t, s.UpsertJob(index, 0, job))
				live[ns+"/"+jobID] = true
			case 3:
				job, err := s.JobByID(nil, ns, jobID)
				must.NoError(t, err)
				if job == nil {
					continue
				}
				stopped := job.Copy()
				stopped.Stop = true
				must.NoError(t, s.UpsertJob(index, 0, stopped))
				live[ns+"/"+jobID] = false
			}
			must.NoError(t, s.NamespaceExists(structs.DefaultNamespace))
			jobs := drain[*structs.Job](t, mustIter(s.Jobs(nil)))
			for _, j := range jobs {
				if j.Status != structs.JobStatusDead {
					must.NoError(t, s.NamespaceExists(j.Namespace), must.Sprintf("live job %s", j.ID))
				}
			}
		}
	})
}
