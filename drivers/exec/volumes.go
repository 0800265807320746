//go:build linux

package exec

import (
	"fmt"
	"path/filepath"

	"github.com/nomad-edge/nomad/drivers"
)

// volumeBinds turns the task's host volume mounts into binds of its root.
// Only private propagation is offered: the task's mount namespace makes
// every mount private before it builds the root (so that nothing leaks to
// the host), so host-to-task and bidirectional would be accepted and not
// honoured; they are refused by name instead (docker honours them).
func volumeBinds(ms []*drivers.MountConfig) ([]bindMount, error) {
	var out []bindMount
	for _, m := range ms {
		if m.PropagationMode != "" && m.PropagationMode != drivers.PropagationPrivate {
			return nil, fmt.Errorf("volume_mount propagation_mode %q is not supported by the exec driver: a task's mounts are private to its mount namespace; use %q, or the docker driver",
				m.PropagationMode, drivers.PropagationPrivate)
		}
		if !filepath.IsAbs(m.TaskPath) || !filepath.IsAbs(m.HostPath) {
			return nil, fmt.Errorf("volume_mount of %q at %q: both paths must be absolute", m.HostPath, m.TaskPath)
		}
		out = append(out, bindMount{Source: filepath.Clean(m.HostPath), Target: filepath.Clean(m.TaskPath), ReadOnly: m.Readonly})
	}
	return out, nil
}
