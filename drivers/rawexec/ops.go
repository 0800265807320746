package rawexec

import (
	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/helper/netns"
)

var _ drivers.Signaler = (*Driver)(nil)

// SignalTask implements drivers.Signaler: the signal goes to the task's
// whole process group, as a stop's does, so that a shell wrapper passes
// a SIGHUP on to the program it runs.
func (d *Driver) SignalTask(taskID, signal string) error { return d.tasks.Signal(taskID, signal) }

// Capabilities implements drivers.CapabilityReporter.
func (d *Driver) Capabilities() drivers.Capabilities {
	return drivers.Capabilities{FSIsolation: drivers.FSIsolationNone, LogFIFO: true, NetNamespace: netns.Supported}
}
