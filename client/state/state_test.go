package state

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// implementations runs a test against every StateDB, so that the in-memory
// twin the client tests use cannot drift from the real database.
func implementations(t *testing.T, f func(t *testing.T, db StateDB)) {
	t.Run("bolt", func(t *testing.T) {
		db, err := OpenBolt(t.TempDir())
		must.NoError(t, err)
		defer db.Close()
		f(t, db)
	})
	t.Run("mem", func(t *testing.T) { f(t, NewMemDB()) })
}

func testHandle(id string) *drivers.TaskHandle {
	h := &drivers.TaskHandle{
		Version: 1,
		Config: &drivers.TaskConfig{
			ID:     id,
			Name:   "web",
			Env:    map[string]string{"A": "b"},
			Config: map[string]any{"run_for": "10s", "args": []any{"x", "y"}, "n": int64(3)},
		},
		State:     drivers.TaskStateRunning,
		StartedAt: time.Unix(1_700_000_000, 0).UTC(),
	}
	h.DriverState = []byte(`{"pid":42}`)
	return h
}

// TestStateDB_RoundTrip checks that everything a restarted client needs
// (identity, allocations, task handles and states) comes back as stored.
func TestStateDB_RoundTrip(t *testing.T) {
	implementations(t, func(t *testing.T, db StateDB) {
		id, err := db.GetNodeIdentity()
		must.NoError(t, err)
		must.Eq(t, NodeIdentity{}, id)
		want := NodeIdentity{NodeID: "n1", SecretID: "s1"}
		must.NoError(t, db.PutNodeIdentity(want))
		id, err = db.GetNodeIdentity()
		must.NoError(t, err)
		must.Eq(t, want, id)

		a1, a2 := mock.Alloc(), mock.Alloc()
		must.NoError(t, db.PutAllocations(a1, a2))
		h := testHandle(a1.ID + "/web")
		must.NoError(t, db.PutTaskHandle(a1.ID, "web", h))
		ts := &structs.TaskState{
			State:     structs.TaskStateRunning,
			Restarts:  2,
			StartedAt: time.Unix(1_700_000_100, 0).UTC(),
			Events:    []*structs.TaskEvent{{Type: structs.TaskStarted, Time: 7}},
		}
		must.NoError(t, db.PutTaskState(a1.ID, "web", ts))

		recs, errs, err := db.GetAllocations()
		must.NoError(t, err)
		must.MapEmpty(t, errs)
		must.Len(t, 2, recs)
		var r1 *AllocRecord
		for _, r := range recs {
			if r.Alloc.ID == a1.ID {
				r1 = r
			}
		}
		must.NotNil(t, r1)
		must.Eq(t, a1.Job.ID, r1.Alloc.Job.ID)
		must.Eq(t, a1.AllocatedResources, r1.Alloc.AllocatedResources)
		must.Eq(t, h.DriverState, r1.Tasks["web"].Handle.DriverState)
		must.Eq(t, h.Config.Config["run_for"], r1.Tasks["web"].Handle.Config.Config["run_for"])
		must.True(t, h.StartedAt.Equal(r1.Tasks["web"].Handle.StartedAt))
		must.Eq(t, 2, r1.Tasks["web"].State.Restarts)
		must.Eq(t, structs.TaskStarted, r1.Tasks["web"].State.Events[0].Type)

		// A nil handle forgets the task's process; its state stays.
		must.NoError(t, db.PutTaskHandle(a1.ID, "web", nil))
		must.NoError(t, db.DeleteAllocation(a2.ID))
		recs, _, err = db.GetAllocations()
		must.NoError(t, err)
		must.Len(t, 1, recs)
		must.Nil(t, recs[0].Tasks["web"].Handle)
		must.NotNil(t, recs[0].Tasks["web"].State)
	})
}

// TestStateDB_LateWritesDropped checks that a task runner writing after its
// allocation was destroyed cannot bring the allocation back.
func TestStateDB_LateWritesDropped(t *testing.T) {
	implementations(t, func(t *testing.T, db StateDB) {
		a := mock.Alloc()
		must.NoError(t, db.PutAllocations(a))
		must.NoError(t, db.DeleteAllocation(a.ID))
		must.NoError(t, db.PutTaskState(a.ID, "web", &structs.TaskState{State: structs.TaskStateDead}))
		must.NoError(t, db.PutTaskHandle(a.ID, "web", testHandle("x")))
		must.NoError(t, db.DeleteAllocation("never-stored"))
		recs, _, err := db.GetAllocations()
		must.NoError(t, err)
		must.SliceEmpty(t, recs)
	})
}

// TestStateDB_ValuesAreCopies checks that callers may keep changing what
// they stored or read without changing the database.
func TestStateDB_ValuesAreCopies(t *testing.T) {
	implementations(t, func(t *testing.T, db StateDB) {
		a := mock.Alloc()
		must.NoError(t, db.PutAllocations(a))
		ts := &structs.TaskState{State: structs.TaskStatePending}
		must.NoError(t, db.PutTaskState(a.ID, "web", ts))
		a.ClientStatus = "changed"
		ts.State = "changed"
		recs, _, err := db.GetAllocations()
		must.NoError(t, err)
		must.Eq(t, structs.AllocClientStatusPending, recs[0].Alloc.ClientStatus)
		must.Eq(t, structs.TaskStatePending, recs[0].Tasks["web"].State.State)
	})
}

// TestBoltStateDB_Reopen checks that the database survives its process, and
// that a closed database refuses calls instead of crashing.
func TestBoltStateDB_Reopen(t *testing.T) {
	dir := t.TempDir()
	db, err := OpenBolt(dir)
	must.NoError(t, err)
	a := mock.Alloc()
	must.NoError(t, db.PutNodeIdentity(NodeIdentity{NodeID: "n1", SecretID: "s1"}))
	must.NoError(t, db.PutAllocations(a))
	must.NoError(t, db.Close())
	must.NoError(t, db.Close())
	must.ErrorIs(t, db.PutAllocations(a), ErrClosed)
	_, _, err = db.GetAllocations()
	must.ErrorIs(t, err, ErrClosed)

	db, err = OpenBolt(dir)
	must.NoError(t, err)
	defer db.Close()
	id, err := db.GetNodeIdentity()
	must.NoError(t, err)
	must.Eq(t, "n1", id.NodeID)
	recs, _, err := db.GetAllocations()
	must.NoError(t, err)
	must.Len(t, 1, recs)
	must.Eq(t, a.ID, recs[0].Alloc.ID)
}

// TestStateDB_Heartbeat checks that the last heartbeat survives a reopen of
// the file: a client restarted while cut off measures from it how long its
// disconnect windows have left ("Offline reboot" in
// docs/concepts/disconnected-clients.md).
func TestStateDB_Heartbeat(t *testing.T) {
	implementations(t, func(t *testing.T, db StateDB) {
		hb, err := db.GetHeartbeat()
		must.NoError(t, err)
		must.Eq(t, Heartbeat{}, hb)
		want := Heartbeat{Wall: time.Unix(1_700_000_123, 456).UTC(), BootID: "b-1", SinceBoot: 90 * time.Minute}
		must.NoError(t, db.PutHeartbeat(want))
		hb, err = db.GetHeartbeat()
		must.NoError(t, err)
		must.True(t, want.Wall.Equal(hb.Wall))
		must.Eq(t, want.BootID, hb.BootID)
		must.Eq(t, want.SinceBoot, hb.SinceBoot)
	})
	dir := t.TempDir()
	db, err := OpenBolt(dir)
	must.NoError(t, err)
	want := Heartbeat{Wall: time.Unix(1_700_000_000, 0).UTC(), BootID: "b-2", SinceBoot: time.Hour}
	must.NoError(t, db.PutHeartbeat(want))
	must.NoError(t, db.Close())
	db, err = OpenBolt(dir)
	must.NoError(t, err)
	defer db.Close()
	hb, err := db.GetHeartbeat()
	must.NoError(t, err)
	must.True(t, want.Wall.Equal(hb.Wall))
	must.Eq(t, want.SinceBoot, hb.SinceBoot)
}
