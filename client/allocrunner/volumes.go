package allocrunner

import (
	"fmt"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// volumeMounts resolves the task's volume_mount blocks against its group's
// volumes and this node's host volumes. A mount is read-only when any of
// the three says so, as upstream.
func (tr *TaskRunner) volumeMounts() ([]*drivers.MountConfig, error) {
	if len(tr.task.VolumeMounts) == 0 {
		return nil, nil
	}
	var tg *structs.TaskGroup
	if tr.alloc.Job != nil {
		tg = tr.alloc.Job.LookupTaskGroup(tr.alloc.TaskGroup)
	}
	var out []*drivers.MountConfig
	for _, m := range tr.task.VolumeMounts {
		if m == nil {
			continue
		}
		var req *structs.VolumeRequest
		if tg != nil {
			req = tg.Volumes[m.Volume]
		}
		if req == nil {
			return nil, fmt.Errorf("no group volume named %q", m.Volume)
		}
		if req.Type != structs.VolumeTypeHost {
			return nil, fmt.Errorf("volume %q: type %q is not supported", m.Volume, req.Type)
		}
		hv := tr.node.HostVolumes[req.Source]
		if hv == nil {
			return nil, fmt.Errorf("no host volume named: %s", req.Source)
		}
		out = append(out, &drivers.MountConfig{
			TaskPath:        m.Destination,
			HostPath:        hv.Path,
			Readonly:        structs.MountReadOnly(hv, req, m),
			PropagationMode: m.PropagationMode,
		})
	}
	return out, nil
}

// volumeMountsOrNone is volumeMounts for the driver's config; a start
// refused by checkVolumeMounts never gets that far.
func (tr *TaskRunner) volumeMountsOrNone() []*drivers.MountConfig {
	ms, _ := tr.volumeMounts()
	return ms
}

// checkVolumeMounts fails the task, without restarts, when its mounts
// cannot be made: a volume this node lacks, or a driver without
// filesystem isolation (raw_exec), which upstream refuses in the same
// words: the task sees the host's paths already, and a mount would have
// to change the host's own filesystem.
func (tr *TaskRunner) checkVolumeMounts() error {
	ms, err := tr.volumeMounts()
	if err == nil && len(ms) > 0 && drivers.CapabilitiesOf(tr.driver).FSIsolation == drivers.FSIsolationNone {
		err = fmt.Errorf("task driver %q for %q does not support host volumes", tr.task.Driver, tr.task.Name)
	}
	if err == nil {
		return nil
	}
	err = fmt.Errorf("volumes: %w", err)
	e := newEvent(structs.TaskSetupFailure, tr.clock.Now())
	e.SetupError = err.Error()
	e.FailsTask = true
	tr.EmitEvent(e)
	return drivers.NewRecoverableError(err, false)
}
