package nomad

import (
	"github.com/nomad-edge/nomad/nomad/structs"
)

func (f *nomadFSM) applyJobStability(req *structs.JobStabilityRequest, index uint64) error {
	return f.State().UpdateJobStability(index, req.RequestNamespace(), req.JobID, req.JobVersion, req.Stable)
}

func (f *nomadFSM) applyScalingEvent(req *structs.ScalingEventRequest, index uint64) error {
	return f.State().UpsertScalingEvent(index, req)
}
