package proctask

// VolumeMounts is what a driver records, when a task starts, about a host
// volume the task mounts with bidirectional propagation: the mounts below
// the volume's host path at that moment. The task's own mounts there show
// on the host as well and outlive its mount namespace; on destroy the
// driver unmounts every mount below HostPath that is not in Before, so that
// nothing the task mounted stays on the host.
type VolumeMounts struct {
	// HostPath is the volume's path on the host, symlinks resolved (as
	// /proc/self/mountinfo names mount points).
	HostPath string `json:"host_path"`
	// Before are the mounts below HostPath when the task started.
	Before []MountRef `json:"before,omitempty"`
}

// MountRef names one mount: its ID in /proc/self/mountinfo and its mount
// point. IDs are reused once a mount is gone; the pair is what tells a
// mount that was there before from a new one at the same place.
type MountRef struct {
	ID   int    `json:"id"`
	Path string `json:"path"`
}
