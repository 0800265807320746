package nomad

import (
	"fmt"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// applyDeployment applies the deployment entries; ok is false for any
// other type.
func (f *nomadFSM) applyDeployment(t structs.MessageType, buf []byte, index uint64) (any, bool) {
	switch t {
	case structs.DeploymentStatusUpdateRequestType:
		var req structs.DeploymentStatusUpdateRequest
		if err := structs.Decode(buf, &req); err != nil {
			return fmt.Errorf("decoding deployment status update: %w", err), true
		}
		if err := f.State().UpdateDeploymentStatus(index, &req); err != nil {
			return err, true
		}
		f.trackOne(req.Eval)
		return nil, true
	case structs.DeploymentPromoteRequestType:
		var req structs.ApplyDeploymentPromoteRequest
		if err := structs.Decode(buf, &req); err != nil {
			return fmt.Errorf("decoding deployment promotion: %w", err), true
		}
		if err := f.State().UpdateDeploymentPromotion(index, &req); err != nil {
			return err, true
		}
		f.trackOne(req.Eval)
		return nil, true
	case structs.DeploymentAllocHealthRequestType:
		var req structs.ApplyDeploymentAllocHealthRequest
		if err := structs.Decode(buf, &req); err != nil {
			return fmt.Errorf("decoding deployment alloc health: %w", err), true
		}
		if err := f.State().UpdateDeploymentAllocHealth(index, &req); err != nil {
			return err, true
		}
		f.trackOne(req.Eval)
		return nil, true
	}
	return nil, false
}

func (f *nomadFSM) trackOne(e *structs.Evaluation) {
	if e != nil {
		f.trackEvals([]*structs.Evaluation{e})
	}
}
