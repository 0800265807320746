//go:build linux

package exec

import (
	"fmt"
	"path/filepath"

	"github.com/nomad-edge/nomad/drivers"
)

// volumeBinds turns the task's host volume mounts into binds of its root,
// with their propagation mode: private (no mount crosses between the host
// and the task), host-to-task (the task's view is a slave of the host's
// mount: what the host mounts below the volume later appears in the task)
// or bidirectional (the task's view is a peer of the host's mount: mounts
// cross both ways). The latter two need the host's mount to be shared
// (checkPropagation, at start), and bidirectional a writable volume, as
// upstream.
func volumeBinds(ms []*drivers.MountConfig) ([]bindMount, error) {
	var out []bindMount
	for _, m := range ms {
		b := bindMount{Source: filepath.Clean(m.HostPath), Target: filepath.Clean(m.TaskPath), ReadOnly: m.Readonly}
		switch m.PropagationMode {
		case "", drivers.PropagationPrivate:
		case drivers.PropagationHostToTask:
			b.Propagation = m.PropagationMode
		case drivers.PropagationBidirectional:
			if m.Readonly {
				return nil, fmt.Errorf("volume_mount of %q at %q: propagation_mode %q needs a writable volume (read_only is set)", m.HostPath, m.TaskPath, m.PropagationMode)
			}
			b.Propagation = m.PropagationMode
		default:
			return nil, fmt.Errorf("volume_mount of %q at %q: invalid propagation_mode %q", m.HostPath, m.TaskPath, m.PropagationMode)
		}
		if !filepath.IsAbs(m.TaskPath) || !filepath.IsAbs(m.HostPath) {
			return nil, fmt.Errorf("volume_mount of %q at %q: both paths must be absolute", m.HostPath, m.TaskPath)
		}
		out = append(out, b)
	}
	return out, nil
}

// checkBinds checks, on the host, that every propagating bind's mount can
// propagate.
func checkBinds(binds []bindMount) error {
	for _, b := range binds {
		if b.Propagation == "" {
			continue
		}
		if err := checkPropagation(b.Source, b.Propagation); err != nil {
			return err
		}
	}
	return nil
}
