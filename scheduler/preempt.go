package scheduler

import (
	"math"
	"sort"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// scorerPreemption names the score of a node that fits only by evicting.
const scorerPreemption = "preemption"

// preemptionInput is one node on which a placement does not fit.
type preemptionInput struct {
	// Capacity is what the node offers; Used what its proposed
	// allocations and the new one would take together.
	Capacity, Used *structs.ComparableResources
	// Proposed are the node's proposed allocations: the candidates.
	Proposed []*structs.Allocation
	// Job is the placing job.
	Job *structs.Job
}

// preemptible reports whether a may be evicted for an allocation of job:
// its job is at least PreemptionPriorityDelta lower in priority and not
// job itself, and it still holds its resources. An unknown allocation is
// left alone: its node is disconnected, so it is no placement target, and
// its tasks may still be running.
func preemptible(a *structs.Allocation, job *structs.Job) bool {
	switch {
	case a.Job == nil, a.TerminalStatus(), a.ClientStatus == structs.AllocClientStatusUnknown:
		return false
	case a.Namespace == job.Namespace && a.JobID == job.ID:
		return false
	}
	return a.Job.Priority <= job.Priority-structs.PreemptionPriorityDelta
}

// selectPreemptions returns the allocations to evict so that the
// placement fits, or nil when no set of preemptible allocations makes it
// fit. It disrupts as little as it can: lower priorities go first; within
// a priority the allocation closest in size to what is still missing is
// taken; and once enough is free, any allocation the rest can do without
// is spared again, the highest priority first.
func selectPreemptions(in preemptionInput) []*structs.Allocation {
	var candidates []*structs.Allocation
	for _, a := range in.Proposed {
		if preemptible(a, in.Job) {
			candidates = append(candidates, a)
		}
	}
	// Deterministic: by priority, then ID, whatever order state gave.
	sort.Slice(candidates, func(i, j int) bool {
		pi, pj := candidates[i].Job.Priority, candidates[j].Job.Priority
		if pi != pj {
			return pi < pj
		}
		return candidates[i].ID < candidates[j].ID
	})
	need := deficit(in.Capacity, in.Used)
	var picked []*structs.Allocation
	for len(candidates) > 0 && !covered(need) {
		// The candidates of the lowest priority left.
		level := 1
		for level < len(candidates) && candidates[level].Job.Priority == candidates[0].Job.Priority {
			level++
		}
		best := 0
		for i := 1; i < level; i++ {
			if resourceDistance(need, candidates[i].ComparableResources()) <
				resourceDistance(need, candidates[best].ComparableResources()) {
				best = i
			}
		}
		a := candidates[best]
		candidates = append(candidates[:best:best], candidates[best+1:]...)
		picked = append(picked, a)
		need = subtracted(need, a.ComparableResources())
	}
	if !covered(need) {
		return nil
	}
	// Spare what is not needed, latest picked (highest priority) first.
	for i := len(picked) - 1; i >= 0; i-- {
		if covered(added(need, picked[i].ComparableResources())) {
			need = added(need, picked[i].ComparableResources())
			picked = append(picked[:i:i], picked[i+1:]...)
		}
	}
	return picked
}

// deficit is how much of each dimension used exceeds capacity by (0 where
// it does not).
func deficit(capacity, used *structs.ComparableResources) *structs.ComparableResources {
	return &structs.ComparableResources{
		CPUShares: max(used.CPUShares-capacity.CPUShares, 0),
		MemoryMB:  max(used.MemoryMB-capacity.MemoryMB, 0),
		DiskMB:    max(used.DiskMB-capacity.DiskMB, 0),
	}
}

// covered reports whether nothing is missing any more: a remaining need
// at or below zero in every dimension.
func covered(need *structs.ComparableResources) bool {
	return need.CPUShares <= 0 && need.MemoryMB <= 0 && need.DiskMB <= 0
}

func subtracted(c, o *structs.ComparableResources) *structs.ComparableResources {
	return &structs.ComparableResources{
		CPUShares: c.CPUShares - o.CPUShares, MemoryMB: c.MemoryMB - o.MemoryMB, DiskMB: c.DiskMB - o.DiskMB,
	}
}

func added(c, o *structs.ComparableResources) *structs.ComparableResources {
	return &structs.ComparableResources{
		CPUShares: c.CPUShares + o.CPUShares, MemoryMB: c.MemoryMB + o.MemoryMB, DiskMB: c.DiskMB + o.DiskMB,
	}
}

// resourceDistance is how far what an allocation frees is from what is
// still missing, each missing dimension measured relative to its need (so
// that MHz and MB weigh alike): 0 for an exact match, 1 per dimension the
// allocation frees nothing of, more for one much larger than needed.
// Dimensions no longer missing do not count.
func resourceDistance(need, frees *structs.ComparableResources) float64 {
	sum := 0.0
	for _, d := range [][2]int64{
		{need.CPUShares, frees.CPUShares}, {need.MemoryMB, frees.MemoryMB}, {need.DiskMB, frees.DiskMB},
	} {
		if d[0] > 0 {
			r := float64(d[0]-d[1]) / float64(d[0])
			sum += r * r
		}
	}
	return math.Sqrt(sum)
}

// preemptionScore is the score of a node that fits only by evicting
// victims, in [-1, -0.5]: below what any node that fits without eviction
// scores for bin packing, and lower the more (and the higher-priority)
// work it evicts, so that among such nodes the least disruptive wins. At
// -0.5 or below it is set aside by the limit iterator while better nodes
// may still come.
func preemptionScore(victims []*structs.Allocation) float64 {
	sum := 0
	for _, a := range victims {
		sum += a.Job.Priority
	}
	return -0.5 - 0.5*math.Min(1, float64(sum)/float64(2*structs.JobMaxPriority))
}

// withoutAllocs returns allocs less those in drop.
func withoutAllocs(allocs, drop []*structs.Allocation) []*structs.Allocation {
	gone := make(map[string]bool, len(drop))
	for _, a := range drop {
		gone[a.ID] = true
	}
	out := make([]*structs.Allocation, 0, len(allocs))
	for _, a := range allocs {
		if !gone[a.ID] {
			out = append(out, a)
		}
	}
	return out
}
