package nomad

import (
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// placedAlloc registers a node and a one-allocation job with mgmt and
// waits for the allocation.
func placedAlloc(t *testing.T, s *Server, mgmt string) (*structs.Node, *structs.Allocation) {
	t.Helper()
	job := mock.Job()
	job.TaskGroups[0].Count = 1
	return placedJobAlloc(t, s, mgmt, job)
}

// placedJobAlloc is placedAlloc with the job given.
func placedJobAlloc(t *testing.T, s *Server, mgmt string, job *structs.Job) (*structs.Node, *structs.Allocation) {
	t.Helper()
	node := registerNode(t, s)
	must.NoError(t, s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job, WriteRequest: structs.WriteRequest{AuthToken: mgmt}}, &structs.JobRegisterResponse{}))
	var out structs.JobAllocationsResponse
	deadline := time.Now().Add(10 * time.Second)
	for len(out.Allocations) < 1 {
		if time.Now().After(deadline) {
			t.Fatal("no allocation placed")
		}
		req := &structs.JobSpecificRequest{JobID: job.ID, QueryOptions: structs.QueryOptions{
			Namespace: job.Namespace, MinQueryIndex: out.Index, MaxQueryTime: time.Second, AuthToken: mgmt}}
		must.NoError(t, s.RPC("Job.Allocations", req, &out))
	}
	alloc, err := s.State().AllocByID(nil, out.Allocations[0].ID)
	must.NoError(t, err)
	return node, alloc
}

// A node gets its task's workload identity signed (only with its own
// secret); the JWT verifies against the published key, carries upstream's
// claims, and as an ACL token reads the variables of its job, group and
// task paths and nothing else; a tampered or expired one is refused.
func TestIdentity_SignPublishAndVariablesACL(t *testing.T) {
	s, mgmt := aclServer(t)
	node, alloc := placedAlloc(t, s, mgmt.SecretID)
	task := alloc.Job.TaskGroups[0].Tasks[0].Name

	req := &structs.AllocIdentitiesRequest{Identities: []*structs.WorkloadIdentityRequest{{AllocID: alloc.ID, TaskName: task}, {AllocID: alloc.ID, TaskName: "nope"}}}
	req.AuthToken = "wrong"
	err := s.RPC("Alloc.SignIdentities", req, &structs.AllocIdentitiesResponse{})
	must.ErrorIs(t, err, structs.ErrPermissionDenied)
	req.AuthToken = node.SecretID
	var signed structs.AllocIdentitiesResponse
	must.NoError(t, s.RPC("Alloc.SignIdentities", req, &signed))
	must.Len(t, 1, signed.SignedIdentities)
	must.Len(t, 1, signed.Rejections)
	jwt := signed.SignedIdentities[0].JWT

	var pub structs.KeyringListPublicResponse
	must.NoError(t, s.RPC("Keyring.ListPublic", &structs.GenericRequest{}, &pub))
	must.Len(t, 1, pub.PublicKeys)
	must.Eq(t, "EdDSA", pub.PublicKeys[0].Algorithm)
	claims, err := s.encrypter.verifyClaims(jwt, time.Now())
	must.NoError(t, err)
	must.Eq(t, alloc.ID, claims.AllocationID)
	must.Eq(t, alloc.JobID, claims.JobID)
	must.Eq(t, task, claims.TaskName)
	must.Eq(t, strings.Join([]string{"global", alloc.Namespace, alloc.JobID, alloc.TaskGroup, task, "default"}, ":"), claims.Subject)

	base := "nomad/jobs/" + alloc.JobID
	for _, p := range []string{base, base + "/" + alloc.TaskGroup, base + "/" + alloc.TaskGroup + "/" + task, "other/secret"} {
		_, err := putVar(t, s, structs.VarOpSet, newVar(p, map[string]string{"k": p}), mgmt.SecretID)
		must.NoError(t, err)
	}
	for _, p := range []string{base, base + "/" + alloc.TaskGroup, base + "/" + alloc.TaskGroup + "/" + task} {
		var read structs.VariablesReadResponse
		must.NoError(t, s.RPC("Variables.Read", &structs.VariablesReadRequest{Path: p, QueryOptions: structs.QueryOptions{AuthToken: jwt}}, &read))
		must.Eq(t, p, read.Data.Items["k"])
	}
	err = s.RPC("Variables.Read", &structs.VariablesReadRequest{Path: "other/secret", QueryOptions: structs.QueryOptions{AuthToken: jwt}}, &structs.VariablesReadResponse{})
	must.ErrorIs(t, err, structs.ErrPermissionDenied)
	_, err = putVar(t, s, structs.VarOpSet, newVar(base, map[string]string{"k": "w"}), jwt)
	must.ErrorIs(t, err, structs.ErrPermissionDenied, must.Sprint("an identity reads, it does not write"))

	parts := strings.Split(jwt, ".")
	tampered := parts[0] + "." + b64.EncodeToString([]byte(`{"nomad_namespace":"default","nomad_job_id":"other","nomad_allocation_id":"`+alloc.ID+`"}`)) + "." + parts[2]
	err = s.RPC("Variables.Read", &structs.VariablesReadRequest{Path: base, QueryOptions: structs.QueryOptions{AuthToken: tampered}}, &structs.VariablesReadResponse{})
	must.ErrorIs(t, err, structs.ErrPermissionDenied)
	must.StrContains(t, err.Error(), "invalid workload identity: bad signature")
	_, err = s.encrypter.verifyClaims(jwt, time.Now().Add(structs.DefaultWorkloadIdentityTTL+time.Second))
	must.ErrorIs(t, err, ErrInvalidIdentity, must.Sprint("expired"))
}

// TestIdentity_ReadsServicesOfItsNamespace checks upstream's implicit
// policy for services: a task's identity lists and reads the services of
// its own namespace (what nomadService and nomadServices need under
// ACLs), but not another namespace's, and gains no read-job from it.
func TestIdentity_ReadsServicesOfItsNamespace(t *testing.T) {
	s, mgmt := aclServer(t)
	node, alloc := placedAlloc(t, s, mgmt.SecretID)
	must.NoError(t, upsertRegs(s, node.ID, node.SecretID, regOf(alloc, "db")))
	var signed structs.AllocIdentitiesResponse
	must.NoError(t, s.RPC("Alloc.SignIdentities", &structs.AllocIdentitiesRequest{
		Identities:   []*structs.WorkloadIdentityRequest{{AllocID: alloc.ID, TaskName: alloc.Job.TaskGroups[0].Tasks[0].Name}},
		QueryOptions: structs.QueryOptions{AuthToken: node.SecretID}}, &signed))
	jwt := signed.SignedIdentities[0].JWT

	regs, err := getService(t, s, jwt, "db", false)
	must.NoError(t, err)
	must.Len(t, 1, regs)
	for _, ns := range []string{alloc.Namespace, "*"} {
		var list structs.ServiceRegistrationListResponse
		must.NoError(t, s.RPC("ServiceRegistration.List", &structs.ServiceRegistrationListRequest{
			QueryOptions: structs.QueryOptions{Namespace: ns, AuthToken: jwt}}, &list))
		must.Len(t, 1, list.Services, must.Sprint(ns))
		must.Eq(t, alloc.Namespace, list.Services[0].Namespace)
	}

	must.NoError(t, upsertNamespace(t, s, mgmt.SecretID, &structs.Namespace{Name: "other"}))
	err = s.RPC("ServiceRegistration.GetService", &structs.ServiceRegistrationByNameRequest{ServiceName: "db",
		QueryOptions: structs.QueryOptions{Namespace: "other", AuthToken: jwt}}, &structs.ServiceRegistrationByNameResponse{})
	must.ErrorIs(t, err, structs.ErrPermissionDenied)
	must.StrContains(t, err.Error(), `its own namespace ("default") and of those its attached policies`)
	err = s.RPC("Job.GetJob", &structs.JobSpecificRequest{JobID: alloc.JobID,
		QueryOptions: structs.QueryOptions{Namespace: alloc.Namespace, AuthToken: jwt}}, &structs.SingleJobResponse{})
	must.ErrorIs(t, err, structs.ErrPermissionDenied, must.Sprint("services only, not the jobs"))
}

// TestIdentity_NamedIdentity checks a task's named identity: signed on
// request by its name with the block's audience and ttl and the name in
// its subject, refused for a name the task does not have, and, presented
// to Nomad's API, no token (its audience is another party's), where the
// default identity of the same task reads its variables.
func TestIdentity_NamedIdentity(t *testing.T) {
	s, mgmt := aclServer(t)
	job := mock.Job()
	job.TaskGroups[0].Count = 1
	task := job.TaskGroups[0].Tasks[0]
	task.Identities = []*structs.WorkloadIdentity{{Name: "vault", Audience: []string{"vault.io"}, File: true, TTL: 10 * time.Minute}}
	node, alloc := placedJobAlloc(t, s, mgmt.SecretID, job)

	req := &structs.AllocIdentitiesRequest{Identities: []*structs.WorkloadIdentityRequest{
		{AllocID: alloc.ID, TaskName: task.Name, IdentityName: "vault"},
		{AllocID: alloc.ID, TaskName: task.Name},
		{AllocID: alloc.ID, TaskName: task.Name, IdentityName: "consul"},
	}}
	req.AuthToken = node.SecretID
	var signed structs.AllocIdentitiesResponse
	must.NoError(t, s.RPC("Alloc.SignIdentities", req, &signed))
	must.Len(t, 2, signed.SignedIdentities)
	must.Len(t, 1, signed.Rejections)
	must.Eq(t, `task "web" has no identity "consul"`, signed.Rejections[0].Reason)
	named, def := signed.SignedIdentities[0], signed.SignedIdentities[1]
	must.Eq(t, "vault", named.IdentityName)
	must.Eq(t, "", def.IdentityName)

	claims, err := s.encrypter.verifyClaims(named.JWT, time.Now())
	must.NoError(t, err)
	must.Eq(t, []string{"vault.io"}, claims.Audience)
	must.Eq(t, strings.Join([]string{"global", alloc.Namespace, alloc.JobID, alloc.TaskGroup, task.Name, "vault"}, ":"), claims.Subject)
	must.Eq(t, int64(10*60), claims.Expiry-claims.IssuedAt)
	dclaims, err := s.encrypter.verifyClaims(def.JWT, time.Now())
	must.NoError(t, err)
	must.Eq(t, []string{structs.WorkloadIdentityAudience}, dclaims.Audience)

	p := "nomad/jobs/" + alloc.JobID
	_, err = putVar(t, s, structs.VarOpSet, newVar(p, map[string]string{"k": "v"}), mgmt.SecretID)
	must.NoError(t, err)
	read := func(tok string) error {
		return s.RPC("Variables.Read", &structs.VariablesReadRequest{Path: p, QueryOptions: structs.QueryOptions{AuthToken: tok}}, &structs.VariablesReadResponse{})
	}
	must.NoError(t, read(def.JWT))
	err = read(named.JWT)
	must.ErrorIs(t, err, structs.ErrPermissionDenied)
	must.StrContains(t, err.Error(), "is not Nomad's")
}
