package nomad

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/structs"
)

func regOf(alloc *structs.Allocation, name string) *structs.ServiceRegistration {
	return &structs.ServiceRegistration{
		ID: "_nomad-task-" + alloc.ID + "-web-" + name + "-http", ServiceName: name, Namespace: alloc.Namespace,
		NodeID: alloc.NodeID, Datacenter: "dc1", JobID: alloc.JobID, AllocID: alloc.ID,
		Address: "10.0.0.1", Port: 8080,
	}
}

func upsertRegs(s *Server, nodeID, secret string, regs ...*structs.ServiceRegistration) error {
	return s.RPC("ServiceRegistration.Upsert", &structs.ServiceRegistrationUpsertRequest{
		Services: regs, NodeID: nodeID, WriteRequest: structs.WriteRequest{AuthToken: secret}},
		&structs.ServiceRegistrationUpsertResponse{})
}

func getService(t *testing.T, s *Server, secret, name string, includeUnknown bool) ([]*structs.ServiceRegistration, error) {
	t.Helper()
	var resp structs.ServiceRegistrationByNameResponse
	err := s.RPC("ServiceRegistration.GetService", &structs.ServiceRegistrationByNameRequest{
		ServiceName: name, IncludeUnknown: includeUnknown, QueryOptions: structs.QueryOptions{AuthToken: secret}}, &resp)
	return resp.Services, err
}

// TestServiceRegistrationUpsert_OnlyOwnAllocations checks that a client
// writes the catalog with its node's secret, and only for allocations on
// its own node: whoever can reach the RPC port must not be able to
// advertise an address for someone else's workload.
func TestServiceRegistrationUpsert_OnlyOwnAllocations(t *testing.T) {
	s := authTestServer(t)
	mine, theirs := registerNode(t, s), registerNode(t, s)
	myAlloc := runningAllocOn(t, s, mine, 1000)
	theirAlloc := runningAllocOn(t, s, theirs, 1010)

	must.ErrorIs(t, upsertRegs(s, mine.ID, "", regOf(myAlloc, "web")), structs.ErrNodeSecretMissing)
	must.ErrorIs(t, upsertRegs(s, mine.ID, theirs.SecretID, regOf(myAlloc, "web")), structs.ErrNodeSecretMismatch)
	must.ErrorIs(t, upsertRegs(s, "", mine.SecretID, regOf(myAlloc, "web")), structs.ErrMissingField)

	// Another node's allocation, claimed as mine or named as theirs.
	forged := regOf(theirAlloc, "web")
	forged.NodeID = mine.ID
	must.ErrorIs(t, upsertRegs(s, mine.ID, mine.SecretID, forged), structs.ErrForeignAlloc)
	must.ErrorIs(t, upsertRegs(s, mine.ID, mine.SecretID, regOf(theirAlloc, "web")), structs.ErrPermissionDenied)
	wrongJob := regOf(myAlloc, "web")
	wrongJob.JobID = "other"
	must.ErrorIs(t, upsertRegs(s, mine.ID, mine.SecretID, wrongJob), structs.ErrInvalidRequest)
	incomplete := regOf(myAlloc, "web")
	incomplete.ServiceName = ""
	must.ErrorIs(t, upsertRegs(s, mine.ID, mine.SecretID, incomplete), structs.ErrInvalidRequest)

	regs, err := getService(t, s, "", "web", true)
	must.NoError(t, err)
	must.SliceEmpty(t, regs)

	must.NoError(t, upsertRegs(s, mine.ID, mine.SecretID, regOf(myAlloc, "web")))
	regs, err = getService(t, s, "", "web", false)
	must.NoError(t, err)
	must.Len(t, 1, regs)
	must.Eq(t, myAlloc.ID, regs[0].AllocID)
	must.Eq(t, structs.ServiceRegistrationStatusActive, regs[0].Status)

	// The node deletes its own instance with its secret, not another's.
	del := func(nodeID, secret, id string) error {
		return s.RPC("ServiceRegistration.DeleteByID", &structs.ServiceRegistrationDeleteByIDRequest{
			ID: id, NodeID: nodeID, WriteRequest: structs.WriteRequest{AuthToken: secret}},
			&structs.ServiceRegistrationDeleteByIDResponse{})
	}
	must.ErrorIs(t, del(theirs.ID, theirs.SecretID, regs[0].ID), structs.ErrForeignAlloc)
	must.NoError(t, del(mine.ID, mine.SecretID, regs[0].ID))
	regs, err = getService(t, s, "", "web", true)
	must.NoError(t, err)
	must.SliceEmpty(t, regs)
}

// TestServiceRegistration_ACL checks upstream's capabilities: read-job
// to list and read services, submit-job to delete one, and that a list
// across namespaces leaves out what the token may not read.
func TestServiceRegistration_ACL(t *testing.T) {
	s, mgmt := aclServer(t)
	node := registerNode(t, s)
	alloc := runningAllocOn(t, s, node, 1000)
	must.NoError(t, upsertRegs(s, node.ID, node.SecretID, regOf(alloc, "web")))

	reader := clientToken(t, s, mgmt, `namespace "default" { policy = "read" }`)
	writer := clientToken(t, s, mgmt, `namespace "default" { policy = "write" }`)
	other := clientToken(t, s, mgmt, `namespace "other" { policy = "write" }`)

	_, err := getService(t, s, "", "web", false)
	must.ErrorIs(t, err, structs.ErrPermissionDenied)
	_, err = getService(t, s, other.SecretID, "web", false)
	must.ErrorIs(t, err, structs.ErrPermissionDenied)
	regs, err := getService(t, s, reader.SecretID, "web", false)
	must.NoError(t, err)
	must.Len(t, 1, regs)

	list := func(secret, ns string) ([]*structs.ServiceRegistrationListStub, error) {
		var resp structs.ServiceRegistrationListResponse
		err := s.RPC("ServiceRegistration.List", &structs.ServiceRegistrationListRequest{
			QueryOptions: structs.QueryOptions{AuthToken: secret, Namespace: ns}}, &resp)
		return resp.Services, err
	}
	stubs, err := list(reader.SecretID, "")
	must.NoError(t, err)
	must.Eq(t, []*structs.ServiceRegistrationListStub{{Namespace: "default",
		Services: []*structs.ServiceRegistrationStub{{ServiceName: "web", Tags: []string{}}}}}, stubs)
	stubs, err = list(other.SecretID, "*")
	must.NoError(t, err)
	must.SliceEmpty(t, stubs)
	_, err = list(other.SecretID, "default")
	must.ErrorIs(t, err, structs.ErrPermissionDenied)

	del := func(secret string) error {
		return s.RPC("ServiceRegistration.DeleteByID", &structs.ServiceRegistrationDeleteByIDRequest{
			ID: regs[0].ID, WriteRequest: structs.WriteRequest{AuthToken: secret}},
			&structs.ServiceRegistrationDeleteByIDResponse{})
	}
	must.ErrorIs(t, del(reader.SecretID), structs.ErrPermissionDenied)
	must.NoError(t, del(writer.SecretID))
	must.ErrorIs(t, del(writer.SecretID), structs.ErrUnknownServiceRegistration)
}

// TestServiceRegistration_UnknownLeftOutOfLookups checks the disconnect
// rule through the RPCs: an instance whose allocation is unknown is left
// out of a lookup by name unless asked for, but is still listed by its
// allocation, and is back in the lookup when the allocation reports again.
func TestServiceRegistration_UnknownLeftOutOfLookups(t *testing.T) {
	s := authTestServer(t)
	node := registerNode(t, s)
	alloc := runningAllocOn(t, s, node, 1000)
	must.NoError(t, upsertRegs(s, node.ID, node.SecretID, regOf(alloc, "web")))

	// What the heartbeat timer and the scheduler write for a cut node.
	must.NoError(t, s.State().UpdateNodeStatus(1999, node.ID, structs.NodeStatusDisconnected, 0, nil))
	unknown := storedAlloc(t, s, alloc.ID).Copy()
	unknown.ClientStatus = structs.AllocClientStatusUnknown
	must.NoError(t, s.State().UpsertAllocs(2000, []*structs.Allocation{unknown}))
	must.ErrorIs(t, upsertRegs(s, node.ID, node.SecretID, regOf(alloc, "web")), structs.ErrNodeNotReady)

	regs, err := getService(t, s, "", "web", false)
	must.NoError(t, err)
	must.SliceEmpty(t, regs)
	regs, err = getService(t, s, "", "web", true)
	must.NoError(t, err)
	must.Len(t, 1, regs)
	must.Eq(t, structs.ServiceRegistrationStatusUnknown, regs[0].Status)
	var byAlloc structs.ServiceRegistrationsResponse
	must.NoError(t, s.RPC("ServiceRegistration.ListByAlloc", &structs.ServiceRegistrationsRequest{ID: alloc.ID}, &byAlloc))
	must.Len(t, 1, byAlloc.Services)

	must.NoError(t, s.State().UpdateNodeStatus(2001, node.ID, structs.NodeStatusReady, 0, nil))
	must.NoError(t, s.State().UpdateAllocsFromClient(2002, []*structs.Allocation{{ID: alloc.ID, ClientStatus: structs.AllocClientStatusRunning}}))
	regs, err = getService(t, s, "", "web", false)
	must.NoError(t, err)
	must.Len(t, 1, regs)
	must.Eq(t, structs.ServiceRegistrationStatusActive, regs[0].Status)
}

// TestChooseServices checks choose=<n>|<key>: the same key picks the same
// instances whatever their order, n caps the answer, and removing an
// instance that was not picked changes nothing (rendezvous hashing, so
// consumers sharding by key keep their assignment).
func TestChooseServices(t *testing.T) {
	var regs []*structs.ServiceRegistration
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		regs = append(regs, &structs.ServiceRegistration{ID: id, ServiceName: "web", AllocID: id, Port: 1})
	}
	two, err := structs.ChooseServices(regs, "2|tenant-1")
	must.NoError(t, err)
	must.Len(t, 2, two)
	reversed := []*structs.ServiceRegistration{regs[4], regs[3], regs[2], regs[1], regs[0]}
	again, err := structs.ChooseServices(reversed, "2|tenant-1")
	must.NoError(t, err)
	must.Eq(t, two, again)

	var rest []*structs.ServiceRegistration
	for _, r := range regs {
		if r != two[0] && r != two[1] {
			rest = append(rest, r)
		}
	}
	fewer, err := structs.ChooseServices(append([]*structs.ServiceRegistration{two[0], two[1]}, rest[1:]...), "2|tenant-1")
	must.NoError(t, err)
	must.Eq(t, two, fewer)

	all, err := structs.ChooseServices(regs, "9|k")
	must.NoError(t, err)
	must.Len(t, 5, all)
	for _, bad := range []string{"", "2", "x|k", "0|k", "2|"} {
		_, err := structs.ChooseServices(regs, bad)
		must.ErrorIs(t, err, structs.ErrInvalidRequest, must.Sprint(bad))
	}
}
