package nomad

import (
	"fmt"

	"github.com/nomad-edge/nomad/nomad/structs"
)

func (f *nomadFSM) applyJobStability(buf []byte, index uint64) any {
	var req structs.JobStabilityRequest
	if err := structs.Decode(buf, &req); err != nil {
		return fmt.Errorf("decoding job stability: %w", err)
	}
	return f.State().UpdateJobStability(index, req.RequestNamespace(), req.JobID, req.JobVersion, req.Stable)
}

func (f *nomadFSM) applyScalingEvent(buf []byte, index uint64) any {
	var req structs.ScalingEventRequest
	if err := structs.Decode(buf, &req); err != nil {
		return fmt.Errorf("decoding scaling event: %w", err)
	}
	return f.State().UpsertScalingEvent(index, &req)
}
