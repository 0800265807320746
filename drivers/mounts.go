package drivers

// MountConfig is one host path a task sees at TaskPath: a group host
// volume mounted by the task's volume_mount (upstream's drivers.MountConfig
// shape). Drivers with filesystem isolation (exec, docker) make the mount;
// the client refuses mounts for drivers without it (raw_exec), as upstream.
type MountConfig struct {
	// TaskPath is the absolute path inside the task.
	TaskPath string
	// HostPath is the host volume's path on the node.
	HostPath string
	// Readonly is true when the node's volume, the group's request or
	// the task's mount says read_only.
	Readonly bool
	// PropagationMode is "private", "host-to-task" or "bidirectional".
	PropagationMode string
}

// Mount propagation modes, upstream's names.
const (
	PropagationPrivate       = "private"
	PropagationHostToTask    = "host-to-task"
	PropagationBidirectional = "bidirectional"
)

// copyMounts returns a deep copy.
func copyMounts(ms []*MountConfig) []*MountConfig {
	if ms == nil {
		return nil
	}
	out := make([]*MountConfig, len(ms))
	for i, m := range ms {
		c := *m
		out[i] = &c
	}
	return out
}
