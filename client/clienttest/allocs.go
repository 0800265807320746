package clienttest

import (
	"time"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// MockAlloc returns a pending allocation on nodeID of a one-task service
// job whose mock_driver task has config cfg, a 1s restart delay and a 1s
// kill timeout. Change alloc.Job before handing it out if the test needs
// another job type or policy; the job is the allocation's own copy.
func MockAlloc(nodeID string, cfg map[string]any) *structs.Allocation {
	a := mock.Alloc()
	a.NodeID = nodeID
	a.NodeName = "test-node"
	a.Job = a.Job.Copy()
	tg := a.Job.TaskGroups[0]
	tg.Count = 1
	tg.RestartPolicy = &structs.RestartPolicy{
		Attempts: 2, Interval: 10 * time.Minute, Delay: time.Second, Mode: structs.RestartPolicyModeFail,
	}
	task := tg.Tasks[0]
	task.Config = cfg
	task.RestartPolicy = tg.RestartPolicy.Copy()
	task.KillTimeout = time.Second
	return a
}

// AllocIDs returns the allocations' IDs.
func AllocIDs(allocs []*structs.Allocation) []string {
	ids := make([]string, len(allocs))
	for i, a := range allocs {
		ids[i] = a.ID
	}
	return ids
}

// LastEvent returns the newest event of type typ on the task, or nil.
func LastEvent(ts *structs.TaskState, typ string) *structs.TaskEvent {
	for i := len(ts.Events) - 1; i >= 0; i-- {
		if ts.Events[i].Type == typ {
			return ts.Events[i]
		}
	}
	return nil
}
