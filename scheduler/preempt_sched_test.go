package scheduler_test

import (
	"fmt"
	"testing"

	"github.com/shoenig/test/must"
	"pgregory.net/rapid"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/scheduler"
	"github.com/nomad-edge/nomad/scheduler/schedtest"
)

// smallNode offers 1000 MHz and 1024 MB once its reservation is taken.
func smallNode() *structs.Node {
	n := mock.Node()
	n.NodeResources.Cpu.CpuShares = 1100
	n.NodeResources.Memory.MemoryMB = 1280
	return n
}

// jobOf returns a job of type typ and priority with one group of one task
// asking cpu MHz and mem MB.
func jobOf(typ string, priority int, cpu, mem int) *structs.Job {
	job := mock.Job()
	job.ID = fmt.Sprintf("%s-p%d-%s", typ, priority, structs.GenerateUUID()[:8])
	job.Type, job.Priority = typ, priority
	tg := job.TaskGroups[0]
	tg.Count = 1
	tg.Tasks[0].Resources = &structs.Resources{CPU: cpu, MemoryMB: mem}
	if typ != structs.JobTypeService {
		tg.ReschedulePolicy = nil
		tg.RestartPolicy = structs.NewRestartPolicy(typ)
	}
	job.Canonicalize()
	return job
}

// runningOn stores a running allocation of job on node, as if placed
// earlier.
func runningOn(h *schedtest.Harness, job *structs.Job, node *structs.Node) *structs.Allocation {
	tg := job.TaskGroups[0]
	a := &structs.Allocation{
		ID: structs.GenerateUUID(), Namespace: job.Namespace, EvalID: structs.GenerateUUID(),
		Name: structs.AllocName(job.ID, tg.Name, 0), JobID: job.ID, Job: job, TaskGroup: tg.Name,
		NodeID: node.ID, NodeName: node.Name, AllocatedResources: structs.NewAllocatedResources(tg),
		DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusRunning,
	}
	h.UpsertAllocs(a)
	return a
}

// runningService stores a running allocation of a new service job of the
// given priority, asking cpu MHz and mem MB, on node.
func runningService(h *schedtest.Harness, node *structs.Node, priority, cpu, mem int) *structs.Allocation {
	return runningOn(h, h.UpsertJob(jobOf(structs.JobTypeService, priority, cpu, mem)), node)
}

// servicePreemption returns a harness over nodes in which the service
// scheduler may preempt.
func servicePreemption(t *testing.T, nodes ...*structs.Node) *schedtest.Harness {
	h := schedtest.NewHarness(t)
	setSchedulerConfig(t, h, func(c *structs.SchedulerConfiguration) { c.PreemptionConfig.ServiceSchedulerEnabled = true })
	h.UpsertNodes(nodes...)
	return h
}

func setSchedulerConfig(t *testing.T, h *schedtest.Harness, mutate func(*structs.SchedulerConfiguration)) {
	t.Helper()
	cfg := structs.DefaultSchedulerConfiguration()
	mutate(cfg)
	_, err := h.State.SchedulerSetConfig(h.NextIndex(), cfg, false)
	must.NoError(t, err)
}

func processJob(t *testing.T, h *schedtest.Harness, job *structs.Job) *structs.Evaluation {
	t.Helper()
	e := schedtest.JobEval(job, structs.EvalTriggerJobRegister)
	h.UpsertEval(e)
	factory := scheduler.BuiltinSchedulers[job.Type]
	must.NoError(t, h.Process(factory, e))
	return h.LastEval()
}

func storedAlloc(t *testing.T, h *schedtest.Harness, id string) *structs.Allocation {
	t.Helper()
	a, err := h.State.AllocByID(nil, id)
	must.NoError(t, err)
	must.NotNil(t, a)
	return a
}

// mustPreempt checks that the last plan placed one allocation of job that
// evicted exactly victims, and that the store says so on both sides.
func mustPreempt(t *testing.T, h *schedtest.Harness, job *structs.Job, victims ...*structs.Allocation) {
	t.Helper()
	plan := h.Plans[len(h.Plans)-1]
	placed := schedtest.PlacedAllocs(plan)
	must.Len(t, 1, placed)
	newAlloc := storedAlloc(t, h, placed[0].ID)
	must.Eq(t, job.ID, newAlloc.JobID)
	var want []string
	for _, v := range victims {
		want = append(want, v.ID)
		got := storedAlloc(t, h, v.ID)
		must.Eq(t, structs.AllocDesiredStatusEvict, got.DesiredStatus)
		must.Eq(t, "Preempted by alloc ID "+newAlloc.ID, got.DesiredDescription)
		must.Eq(t, newAlloc.ID, got.PreemptedByAllocation)
	}
	must.SliceContainsAll(t, want, newAlloc.PreemptedAllocations)
	must.Len(t, len(victims), plan.NodePreemptions[newAlloc.NodeID])
}

// A system job must run on every node: with the default configuration it
// evicts lower priority service work from a full node rather than skip it.
func TestPreemption_SystemJobEvictsLowerPriorityService(t *testing.T) {
	h := schedtest.NewHarness(t)
	node := smallNode()
	h.UpsertNodes(node)
	low := h.UpsertJob(jobOf(structs.JobTypeService, 50, 800, 800))
	lowAlloc := runningOn(h, low, node)

	sys := h.UpsertJob(jobOf(structs.JobTypeSystem, 100, 500, 256))
	eval := processJob(t, h, sys)
	must.Eq(t, structs.EvalStatusComplete, eval.Status)
	must.MapEmpty(t, eval.FailedTGAllocs)
	mustPreempt(t, h, sys, lowAlloc)
}

// Preemption is bounded by the priority gap: a job less than 10 above
// another cannot evict it, and the placement fails as it always did.
func TestPreemption_PriorityDeltaBelowTenDoesNotEvict(t *testing.T) {
	node := smallNode()
	h := servicePreemption(t, node)
	low := h.UpsertJob(jobOf(structs.JobTypeService, 45, 800, 800))
	lowAlloc := runningOn(h, low, node)

	job := h.UpsertJob(jobOf(structs.JobTypeService, 50, 500, 256))
	eval := processJob(t, h, job)
	must.MapContainsKey(t, eval.FailedTGAllocs, "web")
	must.Eq(t, structs.AllocDesiredStatusRun, storedAlloc(t, h, lowAlloc.ID).DesiredStatus)
	for _, p := range h.Plans {
		must.MapEmpty(t, p.NodePreemptions)
	}
}

// Each scheduler type preempts only when the operator's switch for it is
// on; off, the placement fails for lack of resources as before.
func TestPreemption_PerSchedulerSwitch(t *testing.T) {
	cases := []struct {
		typ    string
		enable func(*structs.PreemptionConfig, bool)
	}{
		{structs.JobTypeSystem, func(p *structs.PreemptionConfig, on bool) { p.SystemSchedulerEnabled = on }},
		{structs.JobTypeSysBatch, func(p *structs.PreemptionConfig, on bool) { p.SysBatchSchedulerEnabled = on }},
		{structs.JobTypeService, func(p *structs.PreemptionConfig, on bool) { p.ServiceSchedulerEnabled = on }},
		{structs.JobTypeBatch, func(p *structs.PreemptionConfig, on bool) { p.BatchSchedulerEnabled = on }},
	}
	for _, tc := range cases {
		for _, on := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/%v", tc.typ, on), func(t *testing.T) {
				h := schedtest.NewHarness(t)
				setSchedulerConfig(t, h, func(c *structs.SchedulerConfiguration) { tc.enable(&c.PreemptionConfig, on) })
				node := smallNode()
				h.UpsertNodes(node)
				low := h.UpsertJob(jobOf(structs.JobTypeService, 20, 800, 800))
				lowAlloc := runningOn(h, low, node)

				job := h.UpsertJob(jobOf(tc.typ, 80, 500, 256))
				eval := processJob(t, h, job)
				if on {
					must.MapEmpty(t, eval.FailedTGAllocs)
					mustPreempt(t, h, job, lowAlloc)
					return
				}
				must.MapContainsKey(t, eval.FailedTGAllocs, "web")
				must.Positive(t, eval.FailedTGAllocs["web"].NodesExhausted)
				must.Eq(t, structs.AllocDesiredStatusRun, storedAlloc(t, h, lowAlloc.ID).DesiredStatus)
			})
		}
	}
}

// The scheduler evicts the one small allocation that makes room, not the
// big one beside it, and nothing more.
func TestPreemption_LeastDisruption(t *testing.T) {
	node := smallNode()
	h := servicePreemption(t, node)
	big := runningService(h, node, 20, 100, 600)
	small := runningService(h, node, 20, 100, 300)

	job := h.UpsertJob(jobOf(structs.JobTypeService, 70, 100, 350))
	eval := processJob(t, h, job)
	must.MapEmpty(t, eval.FailedTGAllocs)
	mustPreempt(t, h, job, small)
	must.Eq(t, structs.AllocDesiredStatusRun, storedAlloc(t, h, big.ID).DesiredStatus)
}

// A node that fits without evicting anything wins over one that fits
// only by evicting, however the two would pack.
func TestPreemption_FreeNodePreferred(t *testing.T) {
	full, free := smallNode(), mock.Node()
	h := servicePreemption(t, full, free)
	lowAlloc := runningService(h, full, 20, 800, 800)

	job := h.UpsertJob(jobOf(structs.JobTypeService, 70, 500, 256))
	job.TaskGroups[0].Count = 1
	eval := processJob(t, h, job)
	must.MapEmpty(t, eval.FailedTGAllocs)
	placed := schedtest.PlacedAllocs(h.Plans[len(h.Plans)-1])
	must.Len(t, 1, placed)
	must.Eq(t, free.ID, placed[0].NodeID)
	must.Eq(t, structs.AllocDesiredStatusRun, storedAlloc(t, h, lowAlloc.ID).DesiredStatus)
}

// After any preempting plan, what is left running on the node (the
// allocations not evicted, the new ones included) fits the node.
func TestPreemption_Property_NodeFitsAfterward(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		h := schedtest.NewHarness(rt)
		node := smallNode()
		h.UpsertNodes(node)
		used := 0
		for i := range rapid.IntRange(0, 6).Draw(rt, "n") {
			mem := rapid.IntRange(50, 500).Draw(rt, fmt.Sprintf("mem%d", i))
			if used+mem > 1024 {
				break
			}
			used += mem
			job := h.UpsertJob(jobOf(structs.JobTypeService, rapid.IntRange(1, 100).Draw(rt, fmt.Sprintf("p%d", i)), 50, mem))
			runningOn(h, job, node)
		}
		sys := h.UpsertJob(jobOf(structs.JobTypeSystem, rapid.IntRange(1, 100).Draw(rt, "sysp"), 100, rapid.IntRange(50, 1000).Draw(rt, "sysmem")))
		e := schedtest.JobEval(sys, structs.EvalTriggerJobRegister)
		h.UpsertEval(e)
		must.NoError(rt, h.Process(scheduler.NewSystemScheduler, e))

		allocs, err := h.State.AllocsByNodeTerminal(nil, node.ID, false)
		must.NoError(rt, err)
		left := &structs.ComparableResources{}
		for _, a := range allocs {
			left.Add(a.ComparableResources())
			if a.JobID != sys.ID && a.PreemptedByAllocation != "" {
				rt.Fatalf("alloc %s is preempted but not evicted", a.ID)
			}
		}
		if fit, dim := node.Comparable().Superset(left); !fit {
			rt.Fatalf("node overcommitted in %s after the plan", dim)
		}
	})
}

// The preemption evaluation the plan applier creates for the evicted job
// places its allocation again where it fits: an eviction moves work, it
// does not drop it.
func TestPreemption_EvictedJobIsPlacedElsewhere(t *testing.T) {
	small, big := smallNode(), mock.Node()
	h := servicePreemption(t, small, big)
	low := h.UpsertJob(jobOf(structs.JobTypeService, 20, 100, 500))
	lowAlloc := runningOn(h, low, small)

	high := jobOf(structs.JobTypeService, 70, 100, 700)
	high.Constraints = append(high.Constraints, &structs.Constraint{LTarget: "${node.unique.id}", RTarget: small.ID, Operand: "="})
	high = h.UpsertJob(high)
	must.MapEmpty(t, processJob(t, h, high).FailedTGAllocs)
	mustPreempt(t, h, high, lowAlloc)

	e := schedtest.JobEval(low, structs.EvalTriggerPreemption)
	h.UpsertEval(e)
	must.NoError(t, h.Process(scheduler.NewServiceScheduler, e))
	must.Eq(t, structs.EvalStatusComplete, h.LastEval().Status)
	placed := schedtest.PlacedAllocs(h.Plans[len(h.Plans)-1])
	must.Len(t, 1, placed)
	must.Eq(t, big.ID, placed[0].NodeID)
	must.Eq(t, lowAlloc.Name, placed[0].Name)
}

// Placements of one plan do not count the same eviction twice: each
// allocation of a group that needs room evicts its own victim.
func TestPreemption_OneVictimPerPlacementInAPlan(t *testing.T) {
	node := smallNode()
	h := servicePreemption(t, node)
	a := runningService(h, node, 20, 100, 500)
	b := runningService(h, node, 20, 100, 500)

	job := jobOf(structs.JobTypeService, 70, 100, 450)
	job.TaskGroups[0].Count = 2
	job = h.UpsertJob(job)
	eval := processJob(t, h, job)
	must.MapEmpty(t, eval.FailedTGAllocs)
	plan := h.Plans[len(h.Plans)-1]
	must.Len(t, 2, schedtest.PlacedAllocs(plan))
	must.Len(t, 2, plan.NodePreemptions[node.ID])
	for _, v := range []*structs.Allocation{a, b} {
		must.Eq(t, structs.AllocDesiredStatusEvict, storedAlloc(t, h, v.ID).DesiredStatus)
	}
}

// A dry run tells the user whose work the plan would evict.
func TestPreemption_AnnotatedInPlan(t *testing.T) {
	node := smallNode()
	h := servicePreemption(t, node)
	lowAlloc := runningService(h, node, 20, 800, 800)
	job := h.UpsertJob(jobOf(structs.JobTypeService, 70, 500, 256))

	e := schedtest.JobEval(job, structs.EvalTriggerJobRegister)
	e.AnnotatePlan = true
	h.UpsertEval(e)
	must.NoError(t, h.Process(scheduler.NewServiceScheduler, e))
	ann := h.Plans[len(h.Plans)-1].Annotations
	must.NotNil(t, ann)
	must.Eq(t, uint64(1), ann.DesiredTGUpdates["web"].Preemptions)
	must.Len(t, 1, ann.PreemptedAllocs)
	must.Eq(t, lowAlloc.ID, ann.PreemptedAllocs[0].ID)
}
