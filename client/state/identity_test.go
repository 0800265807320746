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
		must.MapEmpty(t, recs[0].Tasks["web"].NamedIdentities)

		// Named ones are kept beside it, each under its name.
		for _, name := range []string{"vault", "mesh"} {
			named := &structs.SignedWorkloadIdentity{
				WorkloadIdentityRequest: structs.WorkloadIdentityRequest{AllocID: a.ID, TaskName: "web", IdentityName: name},
				JWT:                     name + ".jwt", Expiration: time.Unix(1_700_003_600, 0).UTC(),
			}
			must.NoError(t, db.PutTaskIdentity(a.ID, "web", named))
		}
		recs, _, err = db.GetAllocations()
		must.NoError(t, err)
		tr := recs[0].Tasks["web"]
		must.Eq(t, "a.b.c", tr.Identity.JWT, must.Sprint("the default one untouched"))
		must.MapLen(t, 2, tr.NamedIdentities)
		must.Eq(t, "vault.jwt", tr.NamedIdentities["vault"].JWT)
		must.Eq(t, "mesh", tr.NamedIdentities["mesh"].IdentityName)
	})
}
