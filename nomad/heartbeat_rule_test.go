package nomad

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// The heartbeat rule decides whether an unreachable node's workloads may
// still come back (disconnected) or must move now (down), and when a
// disconnected node must be looked at again. Getting it wrong either
// replaces healthy edge workloads early or keeps a dead node forever.
func TestStatusAfterMiss(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	window := time.Hour
	alloc := func(client, desired string, lostAfter time.Duration, unknownSince time.Time) *structs.Allocation {
		a := mock.Alloc()
		a.Job = a.Job.Copy()
		if lostAfter > 0 {
			a.Job.TaskGroups[0].Disconnect = &structs.DisconnectStrategy{LostAfter: lostAfter}
		}
		a.ClientStatus, a.DesiredStatus = client, desired
		if !unknownSince.IsZero() {
			a.AllocStates = []*structs.AllocState{{Field: structs.AllocStateFieldClientStatus, Value: structs.AllocClientStatusUnknown, Time: unknownSince}}
		}
		return a
	}
	ready := mock.Node()
	ready.Status = structs.NodeStatusReady
	disc := mock.Node()
	disc.Status = structs.NodeStatusDisconnected
	disc.StatusUpdatedAt = now.Add(-10 * time.Minute).Unix()
	run, stop := structs.AllocDesiredStatusRun, structs.AllocDesiredStatusStop
	var zero time.Time
	// fromPool is an allocation whose group sets nothing, placed in a node
	// pool whose disconnect policy gives it the window.
	fromPool := func(client string, unknownSince time.Time) *structs.Allocation {
		a := alloc(client, run, 0, unknownSince)
		a.PoolDisconnect = &structs.PoolDisconnect{Pool: "edge", Policy: &structs.NodePoolDisconnect{LostAfter: window}}
		return a
	}

	for _, tc := range []struct {
		name       string
		node       *structs.Node
		allocs     []*structs.Allocation
		wantStatus string
		wantUntil  time.Time
	}{
		{"no allocations", ready, nil, structs.NodeStatusDown, zero},
		{"running, no window", ready, []*structs.Allocation{alloc("running", run, 0, zero)}, structs.NodeStatusDown, zero},
		{"running with a window, first miss", ready, []*structs.Allocation{alloc("running", run, window, zero)},
			structs.NodeStatusDisconnected, now.Add(window)},
		{"running with a window, already disconnected: counted from the disconnect", disc, []*structs.Allocation{alloc("running", run, window, zero)},
			structs.NodeStatusDisconnected, now.Add(-10 * time.Minute).Add(window)},
		{"unknown within its window", disc, []*structs.Allocation{alloc("unknown", run, window, now.Add(-30*time.Minute))},
			structs.NodeStatusDisconnected, now.Add(30 * time.Minute)},
		{"unknown, window expired", disc, []*structs.Allocation{alloc("unknown", run, window, now.Add(-2*time.Hour))},
			structs.NodeStatusDown, zero},
		{"the latest window counts", disc, []*structs.Allocation{
			alloc("unknown", run, window, now.Add(-50*time.Minute)),
			alloc("unknown", run, window, now.Add(-5*time.Minute)),
		}, structs.NodeStatusDisconnected, now.Add(55 * time.Minute)},
		{"desired stop never holds a node", disc, []*structs.Allocation{alloc("unknown", stop, window, now.Add(-time.Minute))},
			structs.NodeStatusDown, zero},
		{"running, window from its node pool", ready, []*structs.Allocation{fromPool("running", zero)},
			structs.NodeStatusDisconnected, now.Add(window)},
		{"unknown, window from its node pool", disc, []*structs.Allocation{fromPool("unknown", now.Add(-30*time.Minute))},
			structs.NodeStatusDisconnected, now.Add(30 * time.Minute)},
		{"failed, complete and pending never hold a node", ready, []*structs.Allocation{
			alloc("failed", run, window, zero), alloc("complete", run, window, zero), alloc("pending", run, window, zero),
		}, structs.NodeStatusDown, zero},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, until := structs.StatusAfterMiss(tc.node, tc.allocs, now)
			must.Eq(t, tc.wantStatus, status)
			must.Eq(t, tc.wantUntil, until)
		})
	}
}
