package nomad

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// The children of periodic and parameterized jobs are collected like batch
// jobs once dead and old, sysbatch children included, or a device that
// runs a job every five minutes keeps every child forever; the parent
// stays while it is running (waiting for launches), and goes once stopped.
func TestCoreGC_PeriodicChildrenAndParents(t *testing.T) {
	w := newGCWorld(t)
	parent := mock.BatchJob()
	parent.ID = "sweep"
	parent.Type = structs.JobTypeSysBatch
	parent.TaskGroups[0].Count = 1
	parent.Periodic = &structs.PeriodicConfig{Enabled: true, Specs: []string{"*/5 * * * *"}}
	parent.Canonicalize()
	w.job(parent, gcT0)

	child := parent.PeriodicChild(gcT0)
	w.job(child, gcT0)
	ev := w.eval(child, structs.EvalStatusComplete, gcT0)
	w.alloc(child, ev, "node-1", structs.AllocClientStatusComplete, structs.AllocDesiredStatusRun, gcT0)
	must.Eq(t, structs.JobStatusDead, mustJob(t, w.st, child).Status)

	later := gcT0.Add(5 * time.Hour)
	g := w.find(gcJobs, later, 4*time.Hour)
	must.Eq(t, []structs.NamespacedID{child.NamespacedID()}, g.jobs, must.Sprint("the dead child goes; the running parent stays"))

	w.apply(g)
	w.stop(parent, later)
	g = w.find(gcJobs, later.Add(5*time.Hour), 4*time.Hour)
	must.Eq(t, []structs.NamespacedID{parent.NamespacedID()}, g.jobs, must.Sprint("a stopped parent goes"))
}
