package nomad

import (
	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

func (f *nomadFSM) applyNodeUpdateDrain(req *structs.NodeUpdateDrainRequest, index uint64) error {
	err := f.State().UpdateNodeDrain(index, req.NodeID, state.NodeDrainUpdate{
		Drain:        req.DrainStrategy != nil,
		Strategy:     req.DrainStrategy,
		MarkEligible: req.MarkEligible,
		Complete:     req.Complete,
		Meta:         req.Meta,
		UpdatedAt:    req.UpdatedAt,
		Event:        req.NodeEvent,
	})
	if err != nil {
		return err
	}
	if req.DrainStrategy == nil && req.MarkEligible {
		f.deps.blocked.UnblockNode(req.NodeID, index)
	}
	return nil
}

func (f *nomadFSM) applyNodeUpdateEligibility(req *structs.NodeUpdateEligibilityRequest, index uint64) error {
	if err := f.State().UpdateNodeEligibility(index, req.NodeID, req.Eligibility, req.NodeEvent); err != nil {
		return err
	}
	if req.Eligibility == structs.NodeSchedulingEligible {
		f.deps.blocked.UnblockNode(req.NodeID, index)
	}
	return nil
}

func (f *nomadFSM) applyNodePurge(req *structs.NodePurgeRequest, index uint64) error {
	if err := f.State().DeleteNode(index, []string{req.NodeID}); err != nil {
		return err
	}
	if len(req.Evals) == 0 {
		return nil
	}
	// The evaluations name the index of the purge.
	for _, e := range req.Evals {
		e.NodeModifyIndex = index
	}
	return f.upsertEvals(index, req.Evals)
}
