package nomad

import (
	"errors"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

func aclServer(t *testing.T) (*Server, *structs.ACLToken) {
	t.Helper()
	s := testServer(t, func(c *Config) { c.ACLEnabled = true })
	var resp structs.ACLTokenUpsertResponse
	must.NoError(t, s.RPC("ACL.Bootstrap", &structs.ACLTokenBootstrapRequest{}, &resp))
	must.Len(t, 1, resp.Tokens)
	return s, resp.Tokens[0]
}

// clientToken writes a policy and a client token holding it.
func clientToken(t *testing.T, s *Server, mgmt *structs.ACLToken, rules string) *structs.ACLToken {
	t.Helper()
	name := "p" + structs.GenerateUUID()[:8]
	must.NoError(t, s.RPC("ACL.UpsertPolicies", &structs.ACLPolicyUpsertRequest{
		Policies:     []*structs.ACLPolicy{{Name: name, Rules: rules}},
		WriteRequest: structs.WriteRequest{AuthToken: mgmt.SecretID},
	}, &structs.GenericResponse{}))
	var resp structs.ACLTokenUpsertResponse
	must.NoError(t, s.RPC("ACL.UpsertTokens", &structs.ACLTokenUpsertRequest{
		Tokens:       []*structs.ACLToken{{Name: "c", Type: structs.ACLClientToken, Policies: []string{name}}},
		WriteRequest: structs.WriteRequest{AuthToken: mgmt.SecretID},
	}, &resp))
	must.Len(t, 1, resp.Tokens)
	must.NotEq(t, "", resp.Tokens[0].SecretID)
	return resp.Tokens[0]
}

// TestACL_BootstrapOnce checks that the first management token can be
// made once only, since bootstrap needs no credentials.
func TestACL_BootstrapOnce(t *testing.T) {
	s, mgmt := aclServer(t)
	must.Eq(t, structs.ACLManagementToken, mgmt.Type)
	err := s.RPC("ACL.Bootstrap", &structs.ACLTokenBootstrapRequest{}, &structs.ACLTokenUpsertResponse{})
	must.True(t, errors.Is(err, structs.ErrInvalidRequest))
	must.ErrorContains(t, err, "ACL bootstrap already done")
}

// TestACL_ClientTokenReadsButCannotWrite checks a read policy end to end
// through the server's RPCs: the token reads jobs, is refused a register
// with a message naming the capability, and an anonymous or unknown
// caller is refused too.
func TestACL_ClientTokenReadsButCannotWrite(t *testing.T) {
	s, mgmt := aclServer(t)
	reader := clientToken(t, s, mgmt, `namespace "default" { policy = "read" }`)

	job := mock.Job()
	register := func(secret string) error {
		return s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job.Copy(),
			WriteRequest: structs.WriteRequest{AuthToken: secret}}, &structs.JobRegisterResponse{})
	}
	err := register(reader.SecretID)
	must.True(t, errors.Is(err, structs.ErrPermissionDenied))
	must.ErrorContains(t, err, `submit-job in namespace "default"`)
	err = register("")
	must.ErrorContains(t, err, "no ACL token given")
	must.True(t, errors.Is(register(structs.GenerateUUID()), structs.ErrTokenNotFound))
	must.NoError(t, register(mgmt.SecretID))

	var list structs.JobListResponse
	must.NoError(t, s.RPC("Job.List", &structs.JobListRequest{QueryOptions: structs.QueryOptions{AuthToken: reader.SecretID}}, &list))
	must.Len(t, 1, list.Jobs)
	err = s.RPC("Node.List", &structs.NodeListRequest{QueryOptions: structs.QueryOptions{AuthToken: reader.SecretID}}, &structs.NodeListResponse{})
	must.ErrorContains(t, err, "node read")
	err = s.RPC("System.GarbageCollect", &structs.GenericRequest{QueryOptions: structs.QueryOptions{AuthToken: reader.SecretID}}, &structs.GenericResponse{})
	must.ErrorContains(t, err, "management token")

	// The reader sees its own token and policy, not the list of all.
	var self structs.ResolveACLTokenResponse
	must.NoError(t, s.RPC("ACL.ResolveToken", &structs.ResolveACLTokenRequest{QueryOptions: structs.QueryOptions{AuthToken: reader.SecretID}}, &self))
	must.Eq(t, reader.AccessorID, self.Token.AccessorID)
	must.Len(t, 1, self.Policies)
	err = s.RPC("ACL.ListTokens", &structs.ACLTokenListRequest{QueryOptions: structs.QueryOptions{AuthToken: reader.SecretID}}, &structs.ACLTokenListResponse{})
	must.True(t, errors.Is(err, structs.ErrPermissionDenied))
}

// TestACL_AnonymousPolicy checks upstream's convention: a policy named
// "anonymous" is what callers without a token get.
func TestACL_AnonymousPolicy(t *testing.T) {
	s, mgmt := aclServer(t)
	list := func() error {
		return s.RPC("Job.List", &structs.JobListRequest{}, &structs.JobListResponse{})
	}
	must.ErrorContains(t, list(), "Permission denied")
	must.NoError(t, s.RPC("ACL.UpsertPolicies", &structs.ACLPolicyUpsertRequest{
		Policies:     []*structs.ACLPolicy{{Name: structs.AnonymousPolicyName, Rules: `namespace "*" { policy = "read" }`}},
		WriteRequest: structs.WriteRequest{AuthToken: mgmt.SecretID},
	}, &structs.GenericResponse{}))
	must.NoError(t, list())
}

// TestACL_PolicyRulesChecked checks that a policy that does not parse is
// refused with its position, instead of being stored and granting nothing.
func TestACL_PolicyRulesChecked(t *testing.T) {
	s, mgmt := aclServer(t)
	err := s.RPC("ACL.UpsertPolicies", &structs.ACLPolicyUpsertRequest{
		Policies:     []*structs.ACLPolicy{{Name: "bad", Rules: `namespace "x" { polcy = "read" }`}},
		WriteRequest: structs.WriteRequest{AuthToken: mgmt.SecretID},
	}, &structs.GenericResponse{})
	must.True(t, errors.Is(err, structs.ErrInvalidRequest))
	must.ErrorContains(t, err, "bad:1:17")
}

// TestACL_ClusterWorksWithACLs checks that the servers' own work and the
// clients' node-secret RPCs are untouched by ACLs: a node registers and a
// job submitted with a management token is placed on it.
func TestACL_ClusterWorksWithACLs(t *testing.T) {
	s, mgmt := aclServer(t)
	node := registerNode(t, s)
	job := mock.Job()
	must.NoError(t, s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job,
		WriteRequest: structs.WriteRequest{AuthToken: mgmt.SecretID}}, &structs.JobRegisterResponse{}))
	var out structs.NodeClientAllocsResponse
	deadline := time.Now().Add(10 * time.Second)
	for len(out.Allocs) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no allocation placed; last saw index %d", out.Index)
		}
		must.NoError(t, s.RPC("Node.GetClientAllocs", &structs.NodeSpecificRequest{NodeID: node.ID,
			QueryOptions: structs.QueryOptions{AuthToken: node.SecretID, MinQueryIndex: out.Index, MaxQueryTime: time.Second}}, &out))
	}
	ids := make([]string, 0, len(out.Allocs))
	for id := range out.Allocs {
		ids = append(ids, id)
	}
	var pulled structs.AllocsGetResponse
	must.NoError(t, s.RPC("Alloc.GetAllocs", &structs.AllocsGetRequest{AllocIDs: ids,
		QueryOptions: structs.QueryOptions{AuthToken: node.SecretID}}, &pulled))
	must.Len(t, len(ids), pulled.Allocs)
}
