package scheduler_test

import (
	"fmt"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/scheduler/schedtest"
)

// A task's memory_max is a promise of memory the node does not reserve:
// only with the operator's memory oversubscription on does the allocation
// carry it (and the drivers enforce it); off, it is ignored, as upstream.
func TestMemoryOversubscription_MemoryMaxFollowsSwitch(t *testing.T) {
	for _, typ := range []string{structs.JobTypeService, structs.JobTypeSystem} {
		for _, on := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/oversubscription=%v", typ, on), func(t *testing.T) {
				h := schedtest.NewHarness(t)
				setSchedulerConfig(t, h, func(c *structs.SchedulerConfiguration) { c.MemoryOversubscriptionEnabled = on })
				h.UpsertNodes(mock.Node())
				job := jobOf(typ, 50, 100, 256)
				job.TaskGroups[0].Tasks[0].Resources.MemoryMaxMB = 1024
				job = h.UpsertJob(job)
				eval := processJob(t, h, job)
				must.MapEmpty(t, eval.FailedTGAllocs)

				placed := schedtest.PlacedAllocs(h.Plans[len(h.Plans)-1])
				must.Len(t, 1, placed)
				mem := storedAlloc(t, h, placed[0].ID).AllocatedResources.Tasks["web"].Memory
				must.Eq(t, 256, mem.MemoryMB)
				want := int64(0)
				if on {
					want = 1024
				}
				must.Eq(t, want, mem.MemoryMaxMB)
			})
		}
	}
}

// An in-place update rebuilds the allocation's resources from the new
// job version; it must apply the switch as a placement does, or memory_max
// would slip back in through any job update.
func TestMemoryOversubscription_InPlaceUpdateFollowsSwitch(t *testing.T) {
	for _, typ := range []string{structs.JobTypeService, structs.JobTypeSystem} {
		t.Run(typ, func(t *testing.T) {
			h := schedtest.NewHarness(t)
			h.UpsertNodes(mock.Node())
			job := jobOf(typ, 50, 100, 256)
			job.TaskGroups[0].Tasks[0].Resources.MemoryMaxMB = 1024
			job = h.UpsertJob(job)
			must.MapEmpty(t, processJob(t, h, job).FailedTGAllocs)

			update := job.Copy()
			update.Meta = map[string]string{"rev": "2"}
			update = h.UpsertJob(update)
			must.MapEmpty(t, processJob(t, h, update).FailedTGAllocs)
			allocs := h.JobAllocs(update)
			must.Len(t, 1, allocs, must.Sprint("updated in place, not replaced"))
			must.Eq(t, update.Version, allocs[0].Job.Version)
			must.Eq(t, 0, allocs[0].AllocatedResources.Tasks["web"].Memory.MemoryMaxMB)
		})
	}
}
