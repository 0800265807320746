package testutil_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/helper/tlsutil"
	"github.com/nomad-edge/nomad/nomad"
	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil"
	"github.com/nomad-edge/nomad/testutil/fault"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// federate starts two regions, "global" and "europe", of n servers each,
// and joins europe's servers to global's gossip pool; it returns once every
// server lists both regions.
func federate(t *testing.T, n int) (global, europe *testutil.Servers) {
	t.Helper()
	global = testutil.StartServers(t, testutil.ServersConfig{N: n})
	europe = testutil.StartServers(t, testutil.ServersConfig{N: n, Server: func(_ int, c *nomad.Config) { c.Region = "europe" }})
	for _, s := range europe.Servers {
		_, err := s.Join([]string{global.Servers[0].SerfAddr()})
		must.NoError(t, err)
	}
	all := slices.Concat(global.Servers, europe.Servers)
	wait.Poll(t, 10*time.Second, "every server lists both regions", func() (bool, string) {
		for _, s := range all {
			if got := s.Regions(); !slices.Equal(got, []string{"europe", "global"}) {
				return false, fmt.Sprint(s.SerfAddr(), " lists ", got)
			}
		}
		return true, ""
	})
	return global, europe
}

// A request names its region; a server of another region passes it to a
// server of that one, whose state answers it, writes and reads alike, and
// each region's raft holds only its own jobs. A region the pool does not
// know is "No path to region", as upstream answers it.
func TestRegions_RequestsForwardedByRegion(t *testing.T) {
	global, europe := federate(t, 1)
	g, e := global.Servers[0], europe.Servers[0]

	job := mock.Job()
	job.Region = "europe"
	var reg structs.JobRegisterResponse
	must.NoError(t, g.RPC("Job.Register", &structs.JobRegisterRequest{Job: job, WriteRequest: structs.WriteRequest{Region: "europe", Namespace: job.Namespace}}, &reg))
	got, err := e.State().JobByID(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	must.NotNil(t, got, must.Sprint("europe's state holds the job registered through global"))
	got, err = g.State().JobByID(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	must.Nil(t, got, must.Sprint("global's state does not"))

	var read structs.SingleJobResponse
	must.NoError(t, g.RPC("Job.GetJob", &structs.JobSpecificRequest{JobID: job.ID, QueryOptions: structs.QueryOptions{Region: "europe", Namespace: job.Namespace}}, &read))
	must.NotNil(t, read.Job, must.Sprint("read through global with region europe"))
	must.Eq(t, reg.JobModifyIndex, read.Job.JobModifyIndex)
	read = structs.SingleJobResponse{}
	must.NoError(t, g.RPC("Job.GetJob", &structs.JobSpecificRequest{JobID: job.ID, QueryOptions: structs.QueryOptions{Namespace: job.Namespace}}, &read))
	must.Nil(t, read.Job, must.Sprint("read through global for its own region"))

	var leader string
	must.NoError(t, g.RPC("Status.Leader", &structs.GenericRequest{QueryOptions: structs.QueryOptions{Region: "europe"}}, &leader))
	must.Eq(t, e.RPCAddr().String(), leader, must.Sprint("europe's leader, asked through global"))
	var peers []string
	must.NoError(t, g.RPC("Status.Peers", &structs.GenericRequest{QueryOptions: structs.QueryOptions{Region: "europe"}}, &peers))
	must.Eq(t, []string{e.RPCAddr().String()}, peers)

	err = g.RPC("Job.GetJob", &structs.JobSpecificRequest{JobID: job.ID, QueryOptions: structs.QueryOptions{Region: "mars"}}, &read)
	must.True(t, errors.Is(err, structs.ErrNoRegionPath), must.Sprint(err))
	must.EqError(t, err, "No path to region")
	var listed []string
	must.NoError(t, e.RPC("Region.List", &structs.GenericRequest{}, &listed))
	must.Eq(t, []string{"europe", "global"}, listed)
}

// A region cut off from the other keeps taking its own writes; a request
// for the unreachable region fails, promptly, instead of being served by
// the wrong region; healed, forwarding works again.
func TestRegions_CutOffRegionKeepsWorking(t *testing.T) {
	global, europe := federate(t, 1)
	g, e := global.Servers[0], europe.Servers[0]
	global.Net.Isolate(e.RPCAddr().String(), fault.Reset)
	europe.Net.Isolate(g.RPCAddr().String(), fault.Reset)

	own := mock.Job()
	var reg structs.JobRegisterResponse
	must.NoError(t, g.RPC("Job.Register", &structs.JobRegisterRequest{Job: own, WriteRequest: structs.WriteRequest{Namespace: own.Namespace}}, &reg))
	eu := mock.Job()
	eu.Region = "europe"
	must.NoError(t, e.RPC("Job.Register", &structs.JobRegisterRequest{Job: eu, WriteRequest: structs.WriteRequest{Region: "europe", Namespace: eu.Namespace}}, &reg))

	start := time.Now()
	far := mock.Job()
	far.Region = "europe"
	err := g.RPC("Job.Register", &structs.JobRegisterRequest{Job: far, WriteRequest: structs.WriteRequest{Region: "europe", Namespace: far.Namespace}}, &reg)
	must.Error(t, err, must.Sprint("a write for the cut-off region"))
	took := time.Since(start)
	must.True(t, took < 10*time.Second, must.Sprint("failed after ", took))
	got, err := g.State().JobByID(nil, far.Namespace, far.ID)
	must.NoError(t, err)
	must.Nil(t, got, must.Sprint("never served by the wrong region"))

	global.Net.Heal(e.RPCAddr().String())
	europe.Net.Heal(g.RPCAddr().String())
	wait.Poll(t, 10*time.Second, "forwarding to europe again", func() (bool, string) {
		err := g.RPC("Job.Register", &structs.JobRegisterRequest{Job: far, WriteRequest: structs.WriteRequest{Region: "europe", Namespace: far.Namespace}}, &reg)
		return err == nil, fmt.Sprint(err)
	})
	got, err = e.State().JobByID(nil, far.Namespace, far.ID)
	must.NoError(t, err)
	must.NotNil(t, got)
}

// ACLs of federated regions: europe copies global's (authoritative)
// policies and global tokens with its replication token, never global's
// local tokens; policy and global-token writes made through europe land
// in global and come back; a local token made through europe stays in
// europe; a delete in global is copied too; and while cut off from global,
// europe still honours the global tokens it holds.
func TestRegions_ACLReplication(t *testing.T) {
	global := testutil.StartServers(t, testutil.ServersConfig{N: 1, Server: func(_ int, c *nomad.Config) { c.ACLEnabled = true }})
	g := global.Servers[0]
	var boot structs.ACLTokenUpsertResponse
	must.NoError(t, g.RPC("ACL.Bootstrap", &structs.ACLTokenBootstrapRequest{}, &boot))
	mgmt := boot.Tokens[0].SecretID
	wr := structs.WriteRequest{AuthToken: mgmt}
	must.NoError(t, g.RPC("ACL.UpsertPolicies", &structs.ACLPolicyUpsertRequest{
		Policies: []*structs.ACLPolicy{{Name: "readonly", Rules: `namespace "default" { policy = "read" }`}}, WriteRequest: wr,
	}, &structs.GenericResponse{}))
	var made structs.ACLTokenUpsertResponse
	must.NoError(t, g.RPC("ACL.UpsertTokens", &structs.ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{
		{Name: "everywhere", Type: structs.ACLClientToken, Policies: []string{"readonly"}, Global: true},
		{Name: "global-only", Type: structs.ACLClientToken, Policies: []string{"readonly"}},
	}, WriteRequest: wr}, &made))
	everywhere, globalOnly := made.Tokens[0], made.Tokens[1]

	europe := testutil.StartServers(t, testutil.ServersConfig{N: 1, Server: func(_ int, c *nomad.Config) {
		c.Region, c.ACLEnabled, c.AuthoritativeRegion, c.ReplicationToken = "europe", true, "global", mgmt
	}})
	e := europe.Servers[0]
	_, err := e.Join([]string{g.SerfAddr()})
	must.NoError(t, err)

	hasToken := func(s *nomad.Server, accessor string) bool {
		tok, err := s.State().ACLTokenByAccessorID(nil, accessor)
		must.NoError(t, err)
		return tok != nil
	}
	hasPolicy := func(s *nomad.Server, name string) bool {
		p, err := s.State().ACLPolicyByName(nil, name)
		must.NoError(t, err)
		return p != nil
	}
	copied := func(what string, cond func() bool) {
		t.Helper()
		wait.Poll(t, 15*time.Second, what, func() (bool, string) { return cond(), "not yet" })
	}
	copied("europe holds global's policy, bootstrap token and global token", func() bool {
		return hasPolicy(e, "readonly") && hasToken(e, boot.Tokens[0].AccessorID) && hasToken(e, everywhere.AccessorID)
	})
	must.False(t, hasToken(e, globalOnly.AccessorID), must.Sprint("a local token of global is never copied"))
	list := &structs.JobListRequest{QueryOptions: structs.QueryOptions{Namespace: "default", AuthToken: everywhere.SecretID}}
	must.NoError(t, e.RPC("Job.List", list, &structs.JobListResponse{}), must.Sprint("a global token works in europe"))
	list.AuthToken = globalOnly.SecretID
	must.Error(t, e.RPC("Job.List", list, &structs.JobListResponse{}), must.Sprint("global's local token does not"))

	// Writes through europe.
	ewr := structs.WriteRequest{AuthToken: mgmt}
	must.NoError(t, e.RPC("ACL.UpsertPolicies", &structs.ACLPolicyUpsertRequest{
		Policies: []*structs.ACLPolicy{{Name: "writer", Rules: `namespace "default" { policy = "write" }`}}, WriteRequest: ewr,
	}, &structs.GenericResponse{}))
	must.True(t, hasPolicy(g, "writer"), must.Sprint("a policy written through europe is global's"))
	copied("the policy written through europe copied back", func() bool { return hasPolicy(e, "writer") })
	var viaEU structs.ACLTokenUpsertResponse
	must.NoError(t, e.RPC("ACL.UpsertTokens", &structs.ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{
		{Name: "made-in-eu", Type: structs.ACLClientToken, Policies: []string{"writer"}, Global: true},
	}, WriteRequest: ewr}, &viaEU))
	must.True(t, hasToken(g, viaEU.Tokens[0].AccessorID), must.Sprint("a global token made through europe is global's"))
	copied("the global token made through europe copied back", func() bool { return hasToken(e, viaEU.Tokens[0].AccessorID) })
	var local structs.ACLTokenUpsertResponse
	must.NoError(t, e.RPC("ACL.UpsertTokens", &structs.ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{
		{Name: "eu-only", Type: structs.ACLClientToken, Policies: []string{"writer"}},
	}, WriteRequest: ewr}, &local))
	must.True(t, hasToken(e, local.Tokens[0].AccessorID))
	must.False(t, hasToken(g, local.Tokens[0].AccessorID), must.Sprint("a local token made through europe stays there"))
	err = e.RPC("ACL.UpsertTokens", &structs.ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{
		{Name: "a", Type: structs.ACLClientToken, Policies: []string{"writer"}, Global: true},
		{Name: "b", Type: structs.ACLClientToken, Policies: []string{"writer"}},
	}, WriteRequest: ewr}, &structs.ACLTokenUpsertResponse{})
	must.ErrorIs(t, err, structs.ErrInvalidRequest)
	must.ErrorContains(t, err, "global and local tokens cannot be written in one request")

	// A delete in global is copied; a token deleted through europe is
	// deleted in global.
	must.NoError(t, g.RPC("ACL.DeleteTokens", &structs.ACLTokenDeleteRequest{AccessorIDs: []string{viaEU.Tokens[0].AccessorID}, WriteRequest: wr}, &structs.GenericResponse{}))
	copied("a global token deleted in global gone from europe", func() bool { return !hasToken(e, viaEU.Tokens[0].AccessorID) })
	must.NoError(t, g.RPC("ACL.DeletePolicies", &structs.ACLPolicyDeleteRequest{Names: []string{"writer"}, WriteRequest: wr}, &structs.GenericResponse{}))
	copied("a policy deleted in global gone from europe", func() bool { return !hasPolicy(e, "writer") })

	// Cut off from global, europe still honours the global token it holds.
	europe.Net.Isolate(g.RPCAddr().String(), fault.Reset)
	global.Net.Isolate(e.RPCAddr().String(), fault.Reset)
	list.AuthToken = everywhere.SecretID
	must.NoError(t, e.RPC("Job.List", list, &structs.JobListResponse{}), must.Sprint("a global token works in europe while it is cut off"))
	err = e.RPC("ACL.UpsertPolicies", &structs.ACLPolicyUpsertRequest{
		Policies: []*structs.ACLPolicy{{Name: "late", Rules: `namespace "default" { policy = "read" }`}}, WriteRequest: ewr,
	}, &structs.GenericResponse{})
	must.Error(t, err, must.Sprint("a policy write needs the authoritative region"))
	must.False(t, hasPolicy(e, "late"))
}

// Under tls.auto each region's CA is its own, so a request for another
// region is refused with the reason instead of failing in a handshake.
func TestRegions_TLSAutoDoesNotForward(t *testing.T) {
	global := startAutoTLSServers(t, 1)
	europe := testutil.StartServers(t, testutil.ServersConfig{N: 1, Server: func(_ int, c *nomad.Config) {
		c.Region = "europe"
		c.TLS = &tlsutil.Config{Auto: true, Region: c.Region}
		c.SerfEncryptKey = autoTLSGossipKey
	}})
	g := global.Servers[0]
	_, err := europe.Servers[0].Join([]string{g.SerfAddr()})
	must.NoError(t, err)
	wait.Poll(t, 10*time.Second, "global lists europe", func() (bool, string) {
		return slices.Equal(g.Regions(), []string{"europe", "global"}), fmt.Sprint(g.Regions())
	})
	var leader string
	err = g.RPC("Status.Leader", &structs.GenericRequest{QueryOptions: structs.QueryOptions{Region: "europe"}}, &leader)
	must.ErrorIs(t, err, structs.ErrNoRegionPath)
	must.ErrorContains(t, err, "tls.auto does not reach other regions")
}
