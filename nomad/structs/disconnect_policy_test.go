package structs_test

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// The precedence of disconnect policies, group > job > pool > none, in the
// one function every caller uses. A job-level block reaches the struct as
// the group's own (the job file parser copies it into every group that
// sets none), so "job" rows are groups whose block came from the job.
// A group that says anything about disconnects, even "0s", is never
// overridden by its pool: an operator's pool default must not change a
// job that chose for itself.
func TestResolveDisconnect_Precedence(t *testing.T) {
	hour, zero := time.Hour, time.Duration(0)
	no := false
	pool := &structs.PoolDisconnect{Pool: "edge", Policy: &structs.NodePoolDisconnect{
		LostAfter: 30 * time.Minute, Replace: &no, Reconcile: structs.ReconcileOptionKeepOriginal}}
	cases := []struct {
		name      string
		tg        *structs.TaskGroup
		pool      *structs.PoolDisconnect
		window    time.Duration
		source    string
		replace   bool
		reconcile string
	}{
		{"group block beats pool", &structs.TaskGroup{Disconnect: &structs.DisconnectStrategy{LostAfter: hour}}, pool,
			hour, structs.DisconnectSourceGroup, true, structs.ReconcileOptionBestScore},
		{"job block (inherited by the group) beats pool", &structs.TaskGroup{Disconnect: &structs.DisconnectStrategy{
			LostAfter: 2 * hour, Reconcile: structs.ReconcileOptionLongestRunning}}, pool,
			2 * hour, structs.DisconnectSourceGroup, true, structs.ReconcileOptionLongestRunning},
		{"legacy max_client_disconnect beats pool", &structs.TaskGroup{MaxClientDisconnect: &hour}, pool,
			hour, structs.DisconnectSourceGroup, true, structs.ReconcileOptionBestScore},
		{"explicit 0s beats pool", &structs.TaskGroup{MaxClientDisconnect: &zero}, pool,
			0, structs.DisconnectSourceGroup, true, structs.ReconcileOptionBestScore},
		{"stop_after_client_disconnect beats pool", &structs.TaskGroup{StopAfterClientDisconnect: &hour}, pool,
			0, structs.DisconnectSourceGroup, true, structs.ReconcileOptionBestScore},
		{"pool when the group sets nothing", &structs.TaskGroup{}, pool,
			30 * time.Minute, structs.DisconnectSourceNodePool, false, structs.ReconcileOptionKeepOriginal},
		{"pool without a policy is none", &structs.TaskGroup{}, &structs.PoolDisconnect{Pool: "edge"},
			0, structs.DisconnectSourceNone, true, structs.ReconcileOptionBestScore},
		{"none", &structs.TaskGroup{}, nil, 0, structs.DisconnectSourceNone, true, structs.ReconcileOptionBestScore},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := structs.ResolveDisconnect(tc.tg, tc.pool)
			must.Eq(t, tc.window, got.LostAfter)
			must.Eq(t, tc.source, got.Source)
			must.Eq(t, tc.replace, got.Replace)
			must.Eq(t, tc.reconcile, got.Reconcile)
		})
	}
}

// The allocation's own methods (window expiry, whether it may reconnect)
// read the pool policy copied onto it, so heartbeats and the reconciler
// agree with alloc status.
func TestAllocation_DisconnectTimeout_FromPool(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	job := &structs.Job{ID: "j", TaskGroups: []*structs.TaskGroup{{Name: "g"}}}
	a := &structs.Allocation{Job: job, TaskGroup: "g", ClientStatus: structs.AllocClientStatusUnknown,
		AllocStates: []*structs.AllocState{{Field: structs.AllocStateFieldClientStatus, Value: structs.AllocClientStatusUnknown, Time: t0}}}
	must.False(t, a.SupportsDisconnect())
	a.PoolDisconnect = &structs.PoolDisconnect{Pool: "edge", Policy: &structs.NodePoolDisconnect{LostAfter: time.Hour}}
	must.True(t, a.SupportsDisconnect())
	end, ok := a.DisconnectTimeout()
	must.True(t, ok)
	must.Eq(t, t0.Add(time.Hour), end)
	must.True(t, a.Expired(t0.Add(time.Hour)))
	must.Eq(t, "lost_after 1h, replace true, reconcile best_score (from node pool edge)", a.DisconnectPolicy().String())
}
