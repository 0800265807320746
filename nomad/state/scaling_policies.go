package state

import (
	"cmp"
	"slices"

	"github.com/hashicorp/go-memdb"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// Scaling policies have no table of their own: each lives in its group,
// so it is versioned, snapshotted and purged with its job, and the jobs
// table's index is theirs. UpsertJob sets their IDs and indexes (see
// structs.Job.SetScalingPolicies). Reads scan the jobs of a namespace,
// which is what a list must do anyway.

// ScalingPolicies returns the scaling policies of the jobs of namespace
// (or AllNamespaces), ordered by ID. The policies are the stored ones:
// copy before changing them.
func (s *StateStore) ScalingPolicies(ws memdb.WatchSet, namespace string) ([]*structs.ScalingPolicy, error) {
	iter, err := s.JobsByIDPrefix(ws, namespace, "")
	if err != nil {
		return nil, err
	}
	var out []*structs.ScalingPolicy
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		out = append(out, raw.(*structs.Job).ScalingPolicies()...)
	}
	slices.SortFunc(out, func(a, b *structs.ScalingPolicy) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// ScalingPolicyByID returns the scaling policy with the given ID, or nil.
func (s *StateStore) ScalingPolicyByID(ws memdb.WatchSet, id string) (*structs.ScalingPolicy, error) {
	iter, err := s.Jobs(ws)
	if err != nil {
		return nil, err
	}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		for _, p := range raw.(*structs.Job).ScalingPolicies() {
			if p.ID == id {
				return p, nil
			}
		}
	}
	return nil, nil
}
