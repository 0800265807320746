package scheduler

import (
	"maps"
	"time"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

var testNow = time.Unix(1_700_000_000, 0)

// allocsFor returns n allocations of job's first group named 0..n-1, each
// on its own node, with the given client status.
func allocsFor(job *structs.Job, n int, clientStatus string) []*structs.Allocation {
	tg := job.TaskGroups[0]
	out := make([]*structs.Allocation, n)
	for i := range out {
		out[i] = &structs.Allocation{
			ID:                 structs.GenerateUUID(),
			Namespace:          job.Namespace,
			EvalID:             structs.GenerateUUID(),
			Name:               structs.AllocName(job.ID, tg.Name, uint(i)),
			NodeID:             structs.GenerateUUID(),
			JobID:              job.ID,
			Job:                job,
			TaskGroup:          tg.Name,
			AllocatedResources: structs.NewAllocatedResources(tg),
			Metrics:            &structs.AllocMetric{},
			DesiredStatus:      structs.AllocDesiredStatusRun,
			ClientStatus:       clientStatus,
			CreateIndex:        uint64(100 + i),
		}
	}
	return out
}

func withWindow(job *structs.Job, window time.Duration) *structs.Job {
	job.TaskGroups[0].MaxClientDisconnect = &window
	return job
}

func nodeWithStatus(status string) *structs.Node {
	n := mock.Node()
	n.Status = status
	return n
}

// failedAt makes a failed at finished.
func failedAt(a *structs.Allocation, finished time.Time) {
	a.ClientStatus = structs.AllocClientStatusFailed
	a.TaskStates = map[string]*structs.TaskState{"web": {State: structs.TaskStateDead, Failed: true, FinishedAt: finished}}
}

// unknownSinceT makes a unknown since t on node.
func unknownSinceT(a *structs.Allocation, node *structs.Node, t time.Time) {
	a.NodeID = node.ID
	a.ClientStatus = structs.AllocClientStatusUnknown
	a.AllocStates = []*structs.AllocState{{Field: structs.AllocStateFieldClientStatus, Value: structs.AllocClientStatusUnknown, Time: t}}
}

// requestNames returns the names of a request's allocations, leaving the
// request as it was.
func requestNames(p placementRequest) []string {
	if p.names == nil {
		return []string{p.name}
	}
	names := *p.names
	names.used = maps.Clone(p.names.used)
	out := make([]string, p.missing)
	for i := range out {
		out[i] = names.next()
	}
	return out
}
