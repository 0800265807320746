package nomad

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// TestIdentity_AttachedPoliciesAddRules checks upstream's
// workload-associated policies: a policy attached (JobACL) to the task's
// job, its group or the task itself adds its rules to the identity's
// implicit policy (a variable of another namespace read, that
// namespace's services listed), while one attached to another group,
// task or job, or to the same job ID in another namespace, adds nothing;
// detaching it takes the rules away at once. This is how a template
// reads a secret shared between jobs.
func TestIdentity_AttachedPoliciesAddRules(t *testing.T) {
	s, mgmt := aclServer(t)
	node, alloc := placedAlloc(t, s, mgmt.SecretID)
	group, task := alloc.TaskGroup, alloc.Job.TaskGroups[0].Tasks[0].Name
	var signed structs.AllocIdentitiesResponse
	must.NoError(t, s.RPC("Alloc.SignIdentities", &structs.AllocIdentitiesRequest{
		Identities:   []*structs.WorkloadIdentityRequest{{AllocID: alloc.ID, TaskName: task}},
		QueryOptions: structs.QueryOptions{AuthToken: node.SecretID}}, &signed))
	jwt := signed.SignedIdentities[0].JWT

	must.NoError(t, upsertNamespace(t, s, mgmt.SecretID, &structs.Namespace{Name: "shared"}))
	shared := newVar("db/password", map[string]string{"k": "v"})
	shared.Namespace = "shared"
	_, err := putVar(t, s, structs.VarOpSet, shared, mgmt.SecretID)
	must.NoError(t, err)
	readShared := func() error {
		return s.RPC("Variables.Read", &structs.VariablesReadRequest{Path: "db/password",
			QueryOptions: structs.QueryOptions{Namespace: "shared", AuthToken: jwt}}, &structs.VariablesReadResponse{})
	}
	listServices := func() error {
		return s.RPC("ServiceRegistration.List", &structs.ServiceRegistrationListRequest{
			QueryOptions: structs.QueryOptions{Namespace: "shared", AuthToken: jwt}}, &structs.ServiceRegistrationListResponse{})
	}
	apply := func(j *structs.JobACL) {
		t.Helper()
		must.NoError(t, s.RPC("ACL.UpsertPolicies", &structs.ACLPolicyUpsertRequest{
			Policies: []*structs.ACLPolicy{{Name: "shared-db", JobACL: j,
				Rules: `namespace "shared" {
  policy = "read"
  variables {
    path "db/*" { capabilities = ["read"] }
  }
}`}},
			WriteRequest: structs.WriteRequest{AuthToken: mgmt.SecretID}}, &structs.GenericResponse{}))
	}

	must.ErrorIs(t, readShared(), structs.ErrPermissionDenied, must.Sprint("no policy yet"))
	ns, job := alloc.Namespace, alloc.JobID
	for _, tc := range []struct {
		name   string
		attach *structs.JobACL
		grants bool
	}{
		{"not attached", nil, false},
		{"the job", &structs.JobACL{Namespace: ns, JobID: job}, true},
		{"its group", &structs.JobACL{Namespace: ns, JobID: job, Group: group}, true},
		{"the task", &structs.JobACL{Namespace: ns, JobID: job, Group: group, Task: task}, true},
		{"another group", &structs.JobACL{Namespace: ns, JobID: job, Group: "other"}, false},
		{"another task", &structs.JobACL{Namespace: ns, JobID: job, Group: group, Task: "other"}, false},
		{"another job", &structs.JobACL{Namespace: ns, JobID: "other"}, false},
		{"the job ID in another namespace", &structs.JobACL{Namespace: "shared", JobID: job}, false},
	} {
		apply(tc.attach)
		if tc.grants {
			must.NoError(t, readShared(), must.Sprint(tc.name))
			must.NoError(t, listServices(), must.Sprint(tc.name))
		} else {
			must.ErrorIs(t, readShared(), structs.ErrPermissionDenied, must.Sprint(tc.name))
			must.ErrorIs(t, listServices(), structs.ErrPermissionDenied, must.Sprint(tc.name))
		}
	}
}

// TestACL_PolicyJobACLValidated checks that an attachment naming a task
// without its group, a group without its job, or a job without its
// namespace (or the reverse) is refused naming the fields, and that an
// empty one is no attachment: a policy stored with half a match would
// attach to nothing, or to more than meant.
func TestACL_PolicyJobACLValidated(t *testing.T) {
	s, mgmt := aclServer(t)
	put := func(j *structs.JobACL) error {
		return s.RPC("ACL.UpsertPolicies", &structs.ACLPolicyUpsertRequest{
			Policies:     []*structs.ACLPolicy{{Name: "p", Rules: `namespace "default" { policy = "read" }`, JobACL: j}},
			WriteRequest: structs.WriteRequest{AuthToken: mgmt.SecretID}}, &structs.GenericResponse{})
	}
	for _, tc := range []struct {
		attach *structs.JobACL
		want   string
	}{
		{&structs.JobACL{JobID: "x"}, "JobACL.JobID needs JobACL.Namespace"},
		{&structs.JobACL{Namespace: "default"}, "JobACL.Namespace needs JobACL.JobID"},
		{&structs.JobACL{Namespace: "default", Group: "g"}, "JobACL.Group needs JobACL.JobID"},
		{&structs.JobACL{Namespace: "default", JobID: "x", Task: "t"}, "JobACL.Task needs JobACL.Group"},
	} {
		err := put(tc.attach)
		must.ErrorIs(t, err, structs.ErrInvalidRequest)
		must.ErrorContains(t, err, tc.want)
	}
	must.NoError(t, put(&structs.JobACL{}))
	p, err := s.State().ACLPolicyByName(nil, "p")
	must.NoError(t, err)
	must.Nil(t, p.JobACL, must.Sprint("an empty attachment is none"))
	must.NoError(t, put(&structs.JobACL{Namespace: "default", JobID: "x", Group: "g", Task: "t"}))
	p, err = s.State().ACLPolicyByName(nil, "p")
	must.NoError(t, err)
	must.Eq(t, &structs.JobACL{Namespace: "default", JobID: "x", Group: "g", Task: "t"}, p.JobACL)
}

// TestIdentity_SignedWithTheBlocksTTL checks that the servers sign a
// task's identity for its identity block's ttl (an hour without one):
// the client renews at half life, so the ttl is how often a task's
// token turns over, which is the operator's to choose.
func TestIdentity_SignedWithTheBlocksTTL(t *testing.T) {
	s, mgmt := aclServer(t)
	_, alloc := placedAlloc(t, s, mgmt.SecretID)
	task := alloc.Job.TaskGroups[0].Tasks[0].Name
	sign := func(a *structs.Allocation) *structs.SignedWorkloadIdentity {
		t.Helper()
		signed, err := s.signIdentity(a, task, "")
		must.NoError(t, err)
		return signed
	}
	now := s.clock.Now()
	got := sign(alloc).Expiration.Sub(now)
	must.Between(t, structs.DefaultWorkloadIdentityTTL-time.Minute, got, structs.DefaultWorkloadIdentityTTL+time.Minute)

	withTTL := alloc.Copy()
	withTTL.Job = alloc.Job.Copy()
	withTTL.Job.TaskGroups[0].Tasks[0].Identity = &structs.WorkloadIdentity{Env: true, TTL: 6 * time.Hour}
	signed := sign(withTTL)
	got = signed.Expiration.Sub(now)
	must.Between(t, 6*time.Hour-time.Minute, got, 6*time.Hour+time.Minute)
	claims, err := s.encrypter.verifyClaims(signed.JWT, now)
	must.NoError(t, err)
	must.Eq(t, signed.Expiration.Unix(), claims.Expiry, must.Sprint("the token's exp says the same"))
}
