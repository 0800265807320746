package scheduler

import (
	"fmt"
	"testing"

	"github.com/shoenig/test/must"
	"pgregory.net/rapid"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// victim returns a running allocation of its own job of the given
// priority, taking cpu MHz and mem MB.
func victim(id string, priority int, cpu, mem int64) *structs.Allocation {
	a := mock.Alloc()
	a.ID = id
	a.Job = a.Job.Copy()
	a.Job.ID = "job-" + id
	a.JobID = a.Job.ID
	a.Job.Priority = priority
	a.ClientStatus = structs.AllocClientStatusRunning
	for _, tr := range a.AllocatedResources.Tasks {
		tr.Cpu.CpuShares, tr.Memory.MemoryMB = cpu, mem
	}
	return a
}

func sumResources(allocs []*structs.Allocation) *structs.ComparableResources {
	out := &structs.ComparableResources{}
	for _, a := range allocs {
		out.Add(a.ComparableResources())
	}
	return out
}

func victimIDs(allocs []*structs.Allocation) []string {
	out := make([]string, len(allocs))
	for i, a := range allocs {
		out[i] = a.ID
	}
	return out
}

// selectPreemptions is the rule that decides whose work is evicted: it
// must take only what upstream would (priority at least 10 lower, never
// the placing job, never an allocation that is gone or unreachable) and
// disrupt as little as it can.
func TestSelectPreemptions(t *testing.T) {
	placing := mock.Job()
	placing.Priority = 50
	capacity := &structs.ComparableResources{CPUShares: 4000, MemoryMB: 1024, DiskMB: 10000}
	ask := &structs.ComparableResources{CPUShares: 100, MemoryMB: 350}

	sameJob := victim("same", 10, 100, 900)
	sameJob.Job, sameJob.JobID = placing, placing.ID
	stopped := victim("stopped", 10, 100, 900)
	stopped.DesiredStatus = structs.AllocDesiredStatusStop
	unknown := victim("unknown", 10, 100, 900)
	unknown.ClientStatus = structs.AllocClientStatusUnknown

	cases := []struct {
		name     string
		proposed []*structs.Allocation
		want     []string // nil: no preemption makes it fit
	}{
		{"delta of 5 is not enough", []*structs.Allocation{victim("p45", 45, 100, 900)}, nil},
		{"delta of exactly 10 is", []*structs.Allocation{victim("p40", 40, 100, 900)}, []string{"p40"}},
		{"never the placing job", []*structs.Allocation{sameJob}, nil},
		{"never a stopped allocation", []*structs.Allocation{stopped}, nil},
		{"never an unknown allocation", []*structs.Allocation{unknown}, nil},
		{
			"the small one that suffices, not the big one",
			[]*structs.Allocation{victim("big", 20, 100, 600), victim("small", 20, 100, 300)},
			[]string{"small"},
		},
		{
			"no more than needed",
			[]*structs.Allocation{victim("a", 20, 100, 300), victim("b", 20, 100, 300), victim("c", 20, 100, 300)},
			[]string{"a"},
		},
		{
			"lowest priority first",
			[]*structs.Allocation{victim("p30", 30, 100, 450), victim("p20", 20, 100, 450)},
			[]string{"p20"},
		},
		{
			"a lower priority not sufficient alone is spared when the next one suffices",
			[]*structs.Allocation{victim("p10", 10, 100, 100), victim("p30", 30, 100, 700)},
			[]string{"p30"},
		},
		{
			"not enough to take",
			[]*structs.Allocation{victim("p45", 45, 100, 800), victim("p20", 20, 100, 100)},
			nil,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			used := sumResources(tc.proposed)
			used.Add(ask)
			got := selectPreemptions(preemptionInput{Capacity: capacity, Used: used, Proposed: tc.proposed, Job: placing})
			if tc.want == nil {
				must.Nil(t, got)
				return
			}
			must.Eq(t, tc.want, victimIDs(got))
		})
	}
}

// Whatever the node holds, a preemption that is chosen makes the
// placement fit, evicts only preemptible allocations and none it could
// spare; and none is chosen only when evicting every preemptible
// allocation would not make it fit either.
func TestSelectPreemptions_Property(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		placing := mock.Job()
		placing.Priority = rapid.IntRange(1, 100).Draw(rt, "priority")
		capacity := &structs.ComparableResources{
			CPUShares: rapid.Int64Range(500, 4000).Draw(rt, "cpu"),
			MemoryMB:  rapid.Int64Range(500, 4000).Draw(rt, "mem"),
			DiskMB:    rapid.Int64Range(500, 4000).Draw(rt, "disk"),
		}
		var proposed []*structs.Allocation
		for i := range rapid.IntRange(0, 8).Draw(rt, "n") {
			a := victim(fmt.Sprintf("a%d", i), rapid.IntRange(1, 100).Draw(rt, "p"),
				rapid.Int64Range(0, 1500).Draw(rt, "acpu"), rapid.Int64Range(0, 1500).Draw(rt, "amem"))
			a.AllocatedResources.Shared.DiskMB = rapid.Int64Range(0, 1500).Draw(rt, "adisk")
			if rapid.Bool().Draw(rt, "unknown") {
				a.ClientStatus = structs.AllocClientStatusUnknown
			}
			proposed = append(proposed, a)
		}
		ask := &structs.ComparableResources{
			CPUShares: rapid.Int64Range(0, 2000).Draw(rt, "askcpu"),
			MemoryMB:  rapid.Int64Range(0, 2000).Draw(rt, "askmem"),
			DiskMB:    rapid.Int64Range(0, 2000).Draw(rt, "askdisk"),
		}
		used := sumResources(proposed)
		used.Add(ask)
		if fit, _ := capacity.Superset(used); fit {
			return // preemption is asked for only when it does not fit
		}
		got := selectPreemptions(preemptionInput{Capacity: capacity, Used: used, Proposed: proposed, Job: placing})

		fitsWithout := func(drop []*structs.Allocation) bool {
			left := sumResources(withoutAllocs(proposed, drop))
			left.Add(ask)
			fit, _ := capacity.Superset(left)
			return fit
		}
		if got == nil {
			var all []*structs.Allocation
			for _, a := range proposed {
				if preemptible(a, placing) {
					all = append(all, a)
				}
			}
			if fitsWithout(all) {
				rt.Fatalf("no preemption chosen although evicting %v fits", victimIDs(all))
			}
			return
		}
		if !fitsWithout(got) {
			rt.Fatalf("evicting %v does not make room", victimIDs(got))
		}
		for i, a := range got {
			if !preemptible(a, placing) {
				rt.Fatalf("evicts %s of priority %d for priority %d", a.ID, a.Job.Priority, placing.Priority)
			}
			rest := append(append([]*structs.Allocation(nil), got[:i]...), got[i+1:]...)
			if fitsWithout(rest) {
				rt.Fatalf("evicts %s although %v suffice", a.ID, victimIDs(rest))
			}
		}
	})
}

// A node that fits only by evicting scores below any that fits as it is,
// so preemption is the last resort, never a way to pack tighter.
func TestPreemptionScore_BelowAnyFit(t *testing.T) {
	for _, victims := range [][]*structs.Allocation{
		{victim("a", 1, 1, 1)},
		{victim("a", 90, 1, 1), victim("b", 90, 1, 1)},
	} {
		s := preemptionScore(victims)
		must.Between(t, -1, s, -0.5)
		must.Less(t, 0, s)
	}
	must.Less(t, preemptionScore([]*structs.Allocation{victim("a", 20, 1, 1)}),
		preemptionScore([]*structs.Allocation{victim("a", 80, 1, 1)}), must.Sprint("higher priority work costs more"))
}
