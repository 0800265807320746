package structs

import (
	"fmt"
	"maps"
	"path"
	"slices"
)

// Volume types of a group's `volume` block. Only host volumes are
// implemented: a csi volume is refused by name at validation.
const (
	VolumeTypeHost = "host"
	VolumeTypeCSI  = "csi"
)

// Propagation modes of a task's volume_mount, upstream's names.
const (
	VolumeMountPropagationPrivate       = "private"
	VolumeMountPropagationHostToTask    = "host-to-task"
	VolumeMountPropagationBidirectional = "bidirectional"
)

// volumeMountPropagations are the valid propagation_mode values.
var volumeMountPropagations = []string{VolumeMountPropagationPrivate, VolumeMountPropagationHostToTask, VolumeMountPropagationBidirectional}

// ClientHostVolumeConfig is one of a client's `host_volume "<name>" { path
// read_only }` blocks as fingerprinted onto its node (Node.HostVolumes).
type ClientHostVolumeConfig struct {
	Name     string
	Path     string
	ReadOnly bool
}

// CopyHostVolumes returns a deep copy of a node's host volumes.
func CopyHostVolumes(m map[string]*ClientHostVolumeConfig) map[string]*ClientHostVolumeConfig {
	if m == nil {
		return nil
	}
	out := make(map[string]*ClientHostVolumeConfig, len(m))
	for k, v := range m {
		if v != nil {
			c := *v
			v = &c
		}
		out[k] = v
	}
	return out
}

// VolumeRequest is a group's `volume "<name>"` block. The CSI fields
// (AccessMode, AttachmentMode, MountOptions) and PerAlloc are carried only
// so that validation can refuse them by name.
type VolumeRequest struct {
	Name           string
	Type           string
	Source         string
	ReadOnly       bool
	AccessMode     string
	AttachmentMode string
	MountOptions   *CSIMountOptions
	PerAlloc       bool
}

// CSIMountOptions is the CSI volume's mount_options block, refused.
type CSIMountOptions struct {
	FSType     string
	MountFlags []string
}

// VolumeMount is a task's `volume_mount` block: where a group volume
// appears inside the task.
type VolumeMount struct {
	Volume          string
	Destination     string
	ReadOnly        bool
	PropagationMode string
}

// copyVolumes returns a deep copy of a group's volume requests.
func copyVolumes(m map[string]*VolumeRequest) map[string]*VolumeRequest {
	if m == nil {
		return nil
	}
	out := make(map[string]*VolumeRequest, len(m))
	for k, v := range m {
		if v != nil {
			c := *v
			if v.MountOptions != nil {
				o := *v.MountOptions
				o.MountFlags = slices.Clone(o.MountFlags)
				c.MountOptions = &o
			}
			v = &c
		}
		out[k] = v
	}
	return out
}

// copyVolumeMounts returns a deep copy of a task's volume mounts.
func copyVolumeMounts(ms []*VolumeMount) []*VolumeMount {
	if ms == nil {
		return nil
	}
	out := make([]*VolumeMount, len(ms))
	for i, m := range ms {
		if m != nil {
			c := *m
			m = &c
		}
		out[i] = m
	}
	return out
}

// canonicalizeVolumeMounts fills the default propagation mode, as upstream.
func canonicalizeVolumeMounts(ms []*VolumeMount) {
	for _, m := range ms {
		if m != nil && m.PropagationMode == "" {
			m.PropagationMode = VolumeMountPropagationPrivate
		}
	}
}

// validateVolumes checks the group's volumes and its tasks' mounts of them.
func (tg *TaskGroup) validateVolumes() []string {
	var p problems
	for _, name := range slices.Sorted(maps.Keys(tg.Volumes)) {
		v := tg.Volumes[name]
		if v == nil {
			p.add("Volume %s is empty", name)
			continue
		}
		switch v.Type {
		case VolumeTypeHost:
		case VolumeTypeCSI:
			p.add("Volume %s: type %q is not supported: CSI volumes are not implemented by this version; use a host volume", name, v.Type)
			continue
		default:
			p.add("Volume %s has unrecognised type %s", name, v.Type)
			continue
		}
		if v.Source == "" {
			p.add("Volume %s has an empty source", name)
		}
		if v.PerAlloc {
			p.add("Volume %s: per_alloc is not supported: it names CSI volumes per allocation, and CSI is not implemented by this version", name)
		}
		if v.AccessMode != "" {
			p.add("Volume %s: host volumes cannot have an access mode (access_mode is for CSI volumes, not implemented by this version)", name)
		}
		if v.AttachmentMode != "" {
			p.add("Volume %s: host volumes cannot have an attachment mode (attachment_mode is for CSI volumes, not implemented by this version)", name)
		}
		if v.MountOptions != nil {
			p.add("Volume %s: host volumes cannot have mount options (mount_options is for CSI volumes, not implemented by this version)", name)
		}
	}
	for _, t := range tg.Tasks {
		if t == nil {
			continue
		}
		for i, m := range t.VolumeMounts {
			where := fmt.Sprintf("Task %s: Volume Mount %d", t.Name, i+1)
			if m == nil {
				p.add("%s is empty", where)
				continue
			}
			if m.Volume == "" {
				p.add("%s references an empty volume", where)
			} else if _, ok := tg.Volumes[m.Volume]; !ok {
				p.add("%s references undefined volume %s", where, m.Volume)
			}
			if m.Destination == "" {
				p.add("%s has an empty destination", where)
			} else if !path.IsAbs(m.Destination) {
				p.add("%s: destination %q must be an absolute path inside the task", where, m.Destination)
			}
			if m.PropagationMode != "" && !slices.Contains(volumeMountPropagations, m.PropagationMode) {
				p.add("%s: propagation_mode %q must be one of %q, %q or %q", where, m.PropagationMode,
					VolumeMountPropagationPrivate, VolumeMountPropagationHostToTask, VolumeMountPropagationBidirectional)
			}
		}
	}
	return p
}

// HostVolumeFits reports whether a node's host volume can serve req: it
// exists and, when req wants to write, is not read-only.
func HostVolumeFits(node *Node, req *VolumeRequest) bool {
	if req == nil || req.Type != VolumeTypeHost {
		return true
	}
	hv, ok := node.HostVolumes[req.Source]
	if !ok || hv == nil {
		return false
	}
	return req.ReadOnly || !hv.ReadOnly
}

// MountReadOnly reports whether a mount is read-only: it is when the node's
// volume, the group's request or the task's mount says so, as upstream.
func MountReadOnly(hv *ClientHostVolumeConfig, req *VolumeRequest, m *VolumeMount) bool {
	return (hv != nil && hv.ReadOnly) || (req != nil && req.ReadOnly) || (m != nil && m.ReadOnly)
}
