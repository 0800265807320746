package nomad

import (
	"github.com/nomad-edge/nomad/nomad/structs"
)

// systemJobEvals builds a node-update evaluation for every running system
// and sysbatch job that has none in have yet. A node that becomes ready
// must get their allocations even though none of them has an allocation
// there; jobs that do are already in have.
// TODO(perf): walks every job; upstream indexes jobs by type.
func (s *Server) systemJobEvals(nodeID string, have []*structs.Evaluation) ([]*structs.Evaluation, error) {
	seen := map[structs.NamespacedID]bool{}
	for _, e := range have {
		seen[structs.NamespacedID{Namespace: e.Namespace, ID: e.JobID}] = true
	}
	iter, err := s.State().Jobs(nil)
	if err != nil {
		return nil, err
	}
	now := s.clock.Now()
	var out []*structs.Evaluation
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		job := raw.(*structs.Job)
		if job.Stopped() || job.IsParent() || (job.Type != structs.JobTypeSystem && job.Type != structs.JobTypeSysBatch) {
			continue
		}
		if seen[structs.NamespacedID{Namespace: job.Namespace, ID: job.ID}] {
			continue
		}
		ev := job.NewEval(structs.EvalTriggerNodeUpdate, now)
		ev.NodeID = nodeID
		out = append(out, ev)
	}
	return append(have, out...), nil
}
