package scheduler

import (
	"maps"
	"slices"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// filterHostVolumes is upstream's reason for a node without a host volume
// the group asks for, or with only a read-only one where it wants to write.
const filterHostVolumes = "missing compatible host volumes"

// hostVolumeChecker rejects nodes that cannot serve the group's host
// volumes. Host volumes are not consumed: any number of allocations may
// mount the same one, as upstream, so the check is per node only.
type hostVolumeChecker struct {
	ctx  *EvalContext
	reqs []*structs.VolumeRequest
}

func newHostVolumeChecker(ctx *EvalContext) *hostVolumeChecker { return &hostVolumeChecker{ctx: ctx} }

// SetTaskGroup takes the group's host volume requests, in name order so
// that a placement's checks run the same way every time.
func (c *hostVolumeChecker) SetTaskGroup(tg *structs.TaskGroup) {
	c.reqs = c.reqs[:0]
	for _, name := range slices.Sorted(maps.Keys(tg.Volumes)) {
		if v := tg.Volumes[name]; v != nil && v.Type == structs.VolumeTypeHost {
			c.reqs = append(c.reqs, v)
		}
	}
}

func (c *hostVolumeChecker) Feasible(n *structs.Node) bool {
	for _, req := range c.reqs {
		if !structs.HostVolumeFits(n, req) {
			c.ctx.filterNode(n, filterHostVolumes)
			return false
		}
	}
	return true
}
