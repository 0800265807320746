package nomad

import "github.com/nomad-edge/nomad/nomad/structs"

func (f *nomadFSM) applyDeploymentStatusUpdate(req *structs.DeploymentStatusUpdateRequest, index uint64) error {
	if err := f.State().UpdateDeploymentStatus(index, req); err != nil {
		return err
	}
	f.trackOne(req.Eval)
	return nil
}

func (f *nomadFSM) applyDeploymentPromote(req *structs.ApplyDeploymentPromoteRequest, index uint64) error {
	if err := f.State().UpdateDeploymentPromotion(index, req); err != nil {
		return err
	}
	f.trackOne(req.Eval)
	return nil
}

func (f *nomadFSM) applyDeploymentAllocHealth(req *structs.ApplyDeploymentAllocHealthRequest, index uint64) error {
	if err := f.State().UpdateDeploymentAllocHealth(index, req); err != nil {
		return err
	}
	f.trackOne(req.Eval)
	return nil
}

func (f *nomadFSM) trackOne(e *structs.Evaluation) {
	if e != nil {
		f.trackEvals([]*structs.Evaluation{e})
	}
}
