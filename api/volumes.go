package api

// VolumeRequest is a group's `volume "<name>"` block, upstream's wire
// shape. Only Type "host" is implemented; the CSI fields and PerAlloc are
// in the shape so that the official client's jobs decode, and the server
// refuses them by name when set.
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

// CSIMountOptions is a CSI volume's mount_options (refused: no CSI here).
type CSIMountOptions struct {
	FSType     string
	MountFlags []string
}

// VolumeMount is a task's `volume_mount` block, upstream's wire shape.
type VolumeMount struct {
	Volume          *string
	Destination     *string
	ReadOnly        *bool
	PropagationMode *string
}

// VolumeMountPropagationPrivate is the default propagation_mode.
const VolumeMountPropagationPrivate = "private"

// Canonicalize fills the defaults as upstream: not read-only, private
// propagation.
func (m *VolumeMount) Canonicalize() {
	if m.ReadOnly == nil {
		m.ReadOnly = new(false)
	}
	if m.PropagationMode == nil {
		m.PropagationMode = new(VolumeMountPropagationPrivate)
	}
}

// HostVolumeInfo is one of a node's host volumes (Node.HostVolumes), the
// official client's shape (the server's JSON also carries the Name).
type HostVolumeInfo struct {
	Path     string
	ReadOnly bool
}
