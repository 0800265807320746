package state

import (
	"testing"

	"github.com/hashicorp/go-memdb"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// regFor is a registration of service name for alloc.
func regFor(alloc *structs.Allocation, name string, port int) *structs.ServiceRegistration {
	return &structs.ServiceRegistration{
		ID: "_nomad-task-" + alloc.ID + "-" + name, ServiceName: name, Namespace: alloc.Namespace,
		NodeID: alloc.NodeID, JobID: alloc.JobID, AllocID: alloc.ID, Datacenter: "dc1",
		Tags: []string{"v1"}, Address: "10.0.0.1", Port: port,
	}
}

func storedReg(t *testing.T, s *StateStore, id string) *structs.ServiceRegistration {
	t.Helper()
	r, err := s.ServiceRegistrationByID(nil, id)
	must.NoError(t, err)
	return r
}

// runningAllocs stores n running allocations of a fresh job on node n1.
func runningAllocs(t *testing.T, s *StateStore, n int) []*structs.Allocation {
	t.Helper()
	allocs := jobWithAllocs(t, s, 10, mock.Job(), "n1", n)
	for _, a := range allocs {
		must.NoError(t, s.UpdateAllocsFromClient(12, []*structs.Allocation{clientUpdate(a.ID, structs.AllocClientStatusRunning)}))
	}
	return allocs
}

// TestServiceRegistrations_UpsertIsIdempotent checks that a registration
// is stored active and that writing it again changes nothing (no index
// bump, no wake-up of blocking queries): clients re-register after every
// restart and reconnect, and consumers must not see churn.
func TestServiceRegistrations_UpsertIsIdempotent(t *testing.T) {
	s := testStateStore(t)
	a := runningAllocs(t, s, 1)[0]
	reg := regFor(a, "web", 8080)
	must.NoError(t, s.UpsertServiceRegistrations(20, []*structs.ServiceRegistration{reg}))
	got := storedReg(t, s, reg.ID)
	must.Eq(t, structs.ServiceRegistrationStatusActive, got.Status)
	must.Eq(t, 20, got.CreateIndex)

	ws := memdb.NewWatchSet()
	_, err := s.ServiceRegistrationsByName(ws, a.Namespace, "web")
	must.NoError(t, err)
	must.NoError(t, s.UpsertServiceRegistrations(21, []*structs.ServiceRegistration{regFor(a, "web", 8080)}))
	watchNotFired(t, ws)
	must.Eq(t, 20, storedReg(t, s, reg.ID).ModifyIndex)

	moved := regFor(a, "web", 9090)
	must.NoError(t, s.UpsertServiceRegistrations(22, []*structs.ServiceRegistration{moved}))
	watchFired(t, ws)
	got = storedReg(t, s, reg.ID)
	must.Eq(t, 9090, got.Port)
	must.Eq(t, 20, got.CreateIndex)
	must.Eq(t, 22, got.ModifyIndex)
}

// TestServiceRegistrations_FollowAllocStatus checks the disconnect rule:
// an unknown allocation's instances are marked unknown in the same write,
// come back active when the client reports the allocation again (without
// the client registering anything), and are removed once it is lost.
func TestServiceRegistrations_FollowAllocStatus(t *testing.T) {
	s := testStateStore(t)
	allocs := runningAllocs(t, s, 2)
	for _, a := range allocs {
		must.NoError(t, s.UpsertServiceRegistrations(20, []*structs.ServiceRegistration{regFor(a, "web", 8080)}))
	}
	id0, id1 := regFor(allocs[0], "web", 0).ID, regFor(allocs[1], "web", 0).ID

	unknown := allocByID(t, s, allocs[0].ID).Copy()
	unknown.ClientStatus, unknown.ClientDescription = structs.AllocClientStatusUnknown, structs.AllocUnknown
	must.NoError(t, s.UpsertAllocs(21, []*structs.Allocation{unknown}))
	got := storedReg(t, s, id0)
	must.Eq(t, structs.ServiceRegistrationStatusUnknown, got.Status)
	must.Eq(t, 21, got.ModifyIndex)
	must.Eq(t, 20, got.CreateIndex)
	must.Eq(t, structs.ServiceRegistrationStatusActive, storedReg(t, s, id1).Status)

	must.NoError(t, s.UpdateAllocsFromClient(22, []*structs.Allocation{clientUpdate(allocs[0].ID, structs.AllocClientStatusRunning)}))
	got = storedReg(t, s, id0)
	must.Eq(t, structs.ServiceRegistrationStatusActive, got.Status)
	must.Eq(t, 20, got.CreateIndex, must.Sprint("the same registration, not a new one"))

	// Unknown again, then lost: the instance leaves the catalog.
	unknown = allocByID(t, s, allocs[0].ID).Copy()
	unknown.ClientStatus = structs.AllocClientStatusUnknown
	must.NoError(t, s.UpsertAllocs(23, []*structs.Allocation{unknown}))
	lost := allocByID(t, s, allocs[0].ID).Copy()
	lost.ClientStatus, lost.DesiredStatus = structs.AllocClientStatusLost, structs.AllocDesiredStatusStop
	must.NoError(t, s.UpsertPlanResults(24, &structs.ApplyPlanResultsRequest{AllocsStopped: []*structs.Allocation{lost}}))
	must.Eq(t, structs.AllocClientStatusLost, allocByID(t, s, allocs[0].ID).ClientStatus)
	must.Nil(t, storedReg(t, s, id0))

	// The client stops the other one: complete removes it too.
	must.NoError(t, s.UpdateAllocsFromClient(25, []*structs.Allocation{clientUpdate(allocs[1].ID, structs.AllocClientStatusComplete)}))
	must.Nil(t, storedReg(t, s, id1))
}

// TestServiceRegistrations_RefusedForDeadOrForeignAllocs checks that the
// state store drops registrations of a terminal or missing allocation, or
// one naming another node, even if the endpoint's snapshot said otherwise:
// a client's late write must not resurrect an instance that is gone.
func TestServiceRegistrations_RefusedForDeadOrForeignAllocs(t *testing.T) {
	s := testStateStore(t)
	allocs := runningAllocs(t, s, 2)
	must.NoError(t, s.UpdateAllocsFromClient(13, []*structs.Allocation{clientUpdate(allocs[0].ID, structs.AllocClientStatusFailed)}))
	foreign := regFor(allocs[1], "web", 1)
	foreign.NodeID = "n2"
	missing := regFor(allocs[1], "web", 2)
	missing.ID, missing.AllocID = "other", "no-such-alloc"
	must.NoError(t, s.UpsertServiceRegistrations(20, []*structs.ServiceRegistration{regFor(allocs[0], "web", 1), foreign, missing}))
	all, err := s.ServiceRegistrationsByNamespace(nil, AllNamespaces)
	must.NoError(t, err)
	must.SliceEmpty(t, all)
}

// TestServiceRegistrations_GCAndLookups checks that collecting an
// allocation removes its instances, and that the lookups by name, job,
// allocation and namespace see what they should.
func TestServiceRegistrations_GCAndLookups(t *testing.T) {
	s := testStateStore(t)
	allocs := runningAllocs(t, s, 2)
	must.NoError(t, s.UpsertServiceRegistrations(20, []*structs.ServiceRegistration{
		regFor(allocs[0], "web", 1), regFor(allocs[0], "api", 2), regFor(allocs[1], "web", 3)}))

	byName, err := s.ServiceRegistrationsByName(nil, allocs[0].Namespace, "web")
	must.NoError(t, err)
	must.Len(t, 2, byName)
	byAlloc, err := s.ServiceRegistrationsByAlloc(nil, allocs[0].ID)
	must.NoError(t, err)
	must.Len(t, 2, byAlloc)
	byJob, err := s.ServiceRegistrationsByJob(nil, allocs[0].Namespace, allocs[0].JobID)
	must.NoError(t, err)
	must.Len(t, 3, byJob)
	inOther, err := s.ServiceRegistrationsByNamespace(nil, "other")
	must.NoError(t, err)
	must.SliceEmpty(t, inOther)
	all, err := s.ServiceRegistrationsByNamespace(nil, allocs[0].Namespace)
	must.NoError(t, err)
	must.Eq(t, []*structs.ServiceRegistrationListStub{{Namespace: allocs[0].Namespace, Services: []*structs.ServiceRegistrationStub{
		{ServiceName: "api", Tags: []string{"v1"}}, {ServiceName: "web", Tags: []string{"v1"}}}}}, ServiceStubs(all))

	must.NoError(t, s.DeleteEval(30, nil, []string{allocs[0].ID}))
	byJob, err = s.ServiceRegistrationsByJob(nil, allocs[0].Namespace, allocs[0].JobID)
	must.NoError(t, err)
	must.Len(t, 1, byJob)
	must.Eq(t, allocs[1].ID, byJob[0].AllocID)

	must.NoError(t, s.DeleteServiceRegistrationByID(31, byJob[0].ID))
	must.NoError(t, s.DeleteServiceRegistrationByID(32, byJob[0].ID), must.Sprint("deleting twice is not an error"))
	must.Nil(t, storedReg(t, s, byJob[0].ID))
}
