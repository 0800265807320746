package scheduler

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// A node serves a host volume request only when it has the volume and,
// for a request that writes, the volume is not read-only: the reason is
// upstream's, which `job status` prints for a failed placement.
func TestHostVolumeChecker(t *testing.T) {
	ctx, _ := testContext(t)
	withRW := mock.Node()
	withRW.HostVolumes = map[string]*structs.ClientHostVolumeConfig{"data": {Name: "data", Path: "/srv/data"}}
	withRO := mock.Node()
	withRO.HostVolumes = map[string]*structs.ClientHostVolumeConfig{"data": {Name: "data", Path: "/srv/data", ReadOnly: true}}
	without := mock.Node()
	other := mock.Node()
	other.HostVolumes = map[string]*structs.ClientHostVolumeConfig{"logs": {Name: "logs", Path: "/var/log"}}

	tg := mock.Job().TaskGroups[0]
	tg.Volumes = map[string]*structs.VolumeRequest{"d": {Name: "d", Type: structs.VolumeTypeHost, Source: "data"}}
	c := newHostVolumeChecker(ctx)
	c.SetTaskGroup(tg)
	must.True(t, c.Feasible(withRW))
	must.False(t, c.Feasible(withRO), must.Sprint("a writer cannot use a read-only volume"))
	must.False(t, c.Feasible(without))
	must.False(t, c.Feasible(other))
	must.Eq(t, 3, ctx.Metrics().ConstraintFiltered[filterHostVolumes])

	tg.Volumes["d"].ReadOnly = true
	c.SetTaskGroup(tg)
	must.True(t, c.Feasible(withRO), must.Sprint("a read-only request fits a read-only volume"))
	must.True(t, c.Feasible(withRW))

	c.SetTaskGroup(mock.Job().TaskGroups[0])
	must.True(t, c.Feasible(without), must.Sprint("a group without volumes fits anywhere"))
}
