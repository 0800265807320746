package nomad

import (
	"fmt"

	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

func (f *nomadFSM) applyNodeUpdateDrain(buf []byte, index uint64) any {
	var req structs.NodeUpdateDrainRequest
	if err := structs.Decode(buf, &req); err != nil {
		return fmt.Errorf("decoding node drain update: %w", err)
	}
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
		f.srv.blockedEvals.UnblockNode(req.NodeID, index)
	}
	return nil
}

func (f *nomadFSM) applyNodeUpdateEligibility(buf []byte, index uint64) any {
	var req structs.NodeUpdateEligibilityRequest
	if err := structs.Decode(buf, &req); err != nil {
		return fmt.Errorf("decoding node eligibility update: %w", err)
	}
	if err := f.State().UpdateNodeEligibility(index, req.NodeID, req.Eligibility, req.NodeEvent); err != nil {
		return err
	}
	if req.Eligibility == structs.NodeSchedulingEligible {
		f.srv.blockedEvals.UnblockNode(req.NodeID, index)
	}
	return nil
}

func (f *nomadFSM) applyNodePurge(buf []byte, index uint64) any {
	var req structs.NodePurgeRequest
	if err := structs.Decode(buf, &req); err != nil {
		return fmt.Errorf("decoding node purge: %w", err)
	}
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
