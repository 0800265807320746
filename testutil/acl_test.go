package testutil_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/helper/tlsutil"
	"github.com/nomad-edge/nomad/helper/tlsutil/tlstest"
	"github.com/nomad-edge/nomad/nomad"
	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil"
)

// Three servers with tls.rpc and ACLs: a bootstrap, a policy and a token
// sent through a follower are forwarded to the leader with the caller's
// token and replicated to every server, so a follower's stale read
// checks the same token; a read-only token is refused a write through a
// follower too (the leader checks the forwarded token), and a client
// still registers with its node secret.
func TestServers_TLS_ACL_Forwarding(t *testing.T) {
	ca := tlstest.NewCA(t)
	serverPair := ca.Issue(t, tlsutil.RoleServer, "global", tlstest.Options{})
	clientPair := ca.Issue(t, tlsutil.RoleClient, "global", tlstest.Options{})
	sc := testutil.StartServers(t, testutil.ServersConfig{
		N: 3,
		Server: func(i int, c *nomad.Config) {
			c.TLS = serverPair.Config("global")
			c.ACLEnabled = true
		},
		ClientTLS: outgoing(t, clientPair),
	})
	leader := sc.WaitForLeader()
	follower := (leader + 1) % 3
	via := func(method string, args, reply any) error {
		return rpcWith(t, outgoing(t, clientPair), sc.Addr(follower), method, args, reply)
	}

	var boot structs.ACLTokenUpsertResponse
	must.NoError(t, via("ACL.Bootstrap", &structs.ACLTokenBootstrapRequest{}, &boot))
	mgmt := boot.Tokens[0].SecretID
	err := via("ACL.Bootstrap", &structs.ACLTokenBootstrapRequest{}, &structs.ACLTokenUpsertResponse{})
	must.True(t, errors.Is(err, structs.ErrInvalidRequest), must.Sprint(err))

	must.NoError(t, via("ACL.UpsertPolicies", &structs.ACLPolicyUpsertRequest{
		Policies:     []*structs.ACLPolicy{{Name: "readonly", Rules: `namespace "default" { policy = "read" }`}},
		WriteRequest: structs.WriteRequest{AuthToken: mgmt},
	}, &structs.GenericResponse{}))
	var created structs.ACLTokenUpsertResponse
	must.NoError(t, via("ACL.UpsertTokens", &structs.ACLTokenUpsertRequest{
		Tokens:       []*structs.ACLToken{{Name: "ci", Type: structs.ACLClientToken, Policies: []string{"readonly"}}},
		WriteRequest: structs.WriteRequest{AuthToken: mgmt},
	}, &created))
	reader := created.Tokens[0].SecretID

	job := mock.Job()
	err = via("Job.Register", &structs.JobRegisterRequest{Job: job, WriteRequest: structs.WriteRequest{AuthToken: reader}}, &structs.JobRegisterResponse{})
	must.True(t, errors.Is(err, structs.ErrPermissionDenied), must.Sprint(err))
	must.NoError(t, via("Job.Register", &structs.JobRegisterRequest{Job: job, WriteRequest: structs.WriteRequest{AuthToken: mgmt}}, &structs.JobRegisterResponse{}))
	for i, s := range sc.Servers {
		waitForJob(t, s, job, fmt.Sprintf("server %d has the job", i))
	}

	// The follower answers a stale read from its own state, with the
	// token replicated to it.
	var list structs.JobListResponse
	must.NoError(t, via("Job.List", &structs.JobListRequest{QueryOptions: structs.QueryOptions{AuthToken: reader, AllowStale: true}}, &list))
	must.Len(t, 1, list.Jobs)
	err = via("Job.List", &structs.JobListRequest{QueryOptions: structs.QueryOptions{AllowStale: true}}, &structs.JobListResponse{})
	must.True(t, errors.Is(err, structs.ErrPermissionDenied), must.Sprint(err))

	cl, _ := sc.AddClient("edge-acl")
	node, err := sc.Leader().State().NodeByID(nil, cl.NodeID())
	must.NoError(t, err)
	must.NotNil(t, node)
}
