package agent

import (
	"slices"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// convertVolumes turns a group's api volume requests into the server's.
// The map key is the volume's name, as upstream: a request whose Name is
// empty (JSON often leaves it out) takes it.
func convertVolumes(in map[string]*api.VolumeRequest) map[string]*structs.VolumeRequest {
	if in == nil {
		return nil
	}
	out := make(map[string]*structs.VolumeRequest, len(in))
	for name, v := range in {
		if v == nil {
			out[name] = nil
			continue
		}
		r := &structs.VolumeRequest{
			Name:           v.Name,
			Type:           v.Type,
			Source:         v.Source,
			ReadOnly:       v.ReadOnly,
			AccessMode:     v.AccessMode,
			AttachmentMode: v.AttachmentMode,
			PerAlloc:       v.PerAlloc,
		}
		if r.Name == "" {
			r.Name = name
		}
		if o := v.MountOptions; o != nil {
			r.MountOptions = &structs.CSIMountOptions{FSType: o.FSType, MountFlags: slices.Clone(o.MountFlags)}
		}
		out[name] = r
	}
	return out
}

// convertVolumeMounts turns a task's api volume mounts into the server's.
func convertVolumeMounts(in []*api.VolumeMount) []*structs.VolumeMount {
	if in == nil {
		return nil
	}
	out := make([]*structs.VolumeMount, 0, len(in))
	for _, m := range in {
		if m == nil {
			out = append(out, nil)
			continue
		}
		out = append(out, &structs.VolumeMount{
			Volume:          deref(m.Volume),
			Destination:     deref(m.Destination),
			ReadOnly:        deref(m.ReadOnly),
			PropagationMode: deref(m.PropagationMode),
		})
	}
	return out
}
