package state

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// TestStateDB_TaskIdentity checks that a task's signed workload identity
// comes back as stored in both databases, since a client restarted while
// cut off hands it to the task instead of asking the servers.
func TestStateDB_TaskIdentity(t *testing.T) {
	implementations(t, func(t *testing.T, db StateDB) {
		a := mock.Alloc()
		must.NoError(t, db.PutAllocations(a))
		want := &structs.SignedWorkloadIdentity{
			WorkloadIdentityRequest: structs.WorkloadIdentityRequest{AllocID: a.ID, TaskName: "web"},
			JWT:                     "a.b.c", Expiration: time.Unix(1_700_003_600, 0).UTC(),
		}
		must.NoError(t, db.PutTaskIdentity(a.ID, "web", want))
		recs, _, err := db.GetAllocations()
		must.NoError(t, err)
		got := recs[0].Tasks["web"].Identity
		must.NotNil(t, got)
		must.Eq(t, want.JWT, got.JWT)
		must.True(t, want.Expiration.Equal(got.Expiration))
	})
}
