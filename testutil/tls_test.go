package testutil_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/helper/pool"
	"github.com/nomad-edge/nomad/helper/tlsutil"
	"github.com/nomad-edge/nomad/helper/tlsutil/tlstest"
	"github.com/nomad-edge/nomad/nomad"
	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil"
)

// tlsCluster is three servers with tls.rpc on, and the certificates of
// the CA that signed theirs.
type tlsCluster struct {
	*testutil.Servers
	ca             *tlstest.CA
	server, client tlstest.Pair
}

func startTLSCluster(t *testing.T) *tlsCluster {
	t.Helper()
	ca := tlstest.NewCA(t)
	tc := &tlsCluster{
		ca:     ca,
		server: ca.Issue(t, tlsutil.RoleServer, "global", tlstest.Options{}),
		client: ca.Issue(t, tlsutil.RoleClient, "global", tlstest.Options{}),
	}
	tc.Servers = testutil.StartServers(t, testutil.ServersConfig{
		N:         3,
		Server:    func(i int, c *nomad.Config) { c.TLS = tc.server.Config("global") },
		ClientTLS: outgoing(t, tc.client),
	})
	return tc
}

func outgoing(t *testing.T, p tlstest.Pair) *tls.Config {
	t.Helper()
	cfg, err := p.Config("global").OutgoingRPC()
	must.NoError(t, err)
	return cfg
}

// rpcWith calls method on addr over a fresh pool dialing with cfg (nil:
// plaintext).
func rpcWith(t *testing.T, cfg *tls.Config, addr, method string, args, reply any) error {
	t.Helper()
	p := pool.NewPool(pool.Config{TLS: cfg, DialTimeout: 5 * time.Second, CallTimeout: 5 * time.Second})
	defer p.Shutdown()
	return p.RPC(addr, method, args, reply, 0)
}

// Three servers with tls.rpc elect a leader and replicate over raft in
// TLS, forward a write from a follower to the leader, and a client dialing
// with a client certificate registers its node: the whole cluster works
// with plaintext refused.
func TestServers_TLS_ClusterWorks(t *testing.T) {
	tc := startTLSCluster(t)
	leader := tc.WaitForLeader()
	follower := (leader + 1) % 3

	job := registerJob(t, tc.Servers.Servers[follower])
	for i, s := range tc.Servers.Servers {
		waitForJob(t, s, job, fmt.Sprintf("server %d has the job", i))
	}

	// A write from outside, with a client certificate, through a
	// follower: forwarded to the leader over the followers' TLS pool.
	var resp structs.JobRegisterResponse
	job2 := mock.Job()
	must.NoError(t, rpcWith(t, outgoing(t, tc.client), tc.Addr(follower), "Job.Register", &structs.JobRegisterRequest{Job: job2}, &resp))
	waitForJob(t, tc.Servers.Servers[leader], job2, "the leader has the job sent with a client certificate")

	cl, _ := tc.AddClient("edge-1")
	node, err := tc.Leader().State().NodeByID(nil, cl.NodeID())
	must.NoError(t, err)
	must.NotNil(t, node)
}

// With TLS on, the scheduling RPCs answer servers only: a client
// certificate (an edge node's, which a thief may hold) cannot take
// evaluations or submit plans, on the leader or through a follower that
// would otherwise forward it with its own server identity. A server
// certificate can.
func TestServers_TLS_SchedulingRPCsNeedServerCertificate(t *testing.T) {
	tc := startTLSCluster(t)
	leader := tc.WaitForLeader()
	follower := (leader + 1) % 3
	clientTLS, serverTLS := outgoing(t, tc.client), outgoing(t, tc.server)
	dequeue := &structs.EvalDequeueRequest{Schedulers: []string{"no-such-scheduler"}, Timeout: 10 * time.Millisecond}

	for _, i := range []int{leader, follower} {
		var dr structs.EvalDequeueResponse
		err := rpcWith(t, clientTLS, tc.Addr(i), "Eval.Dequeue", dequeue, &dr)
		must.True(t, errors.Is(err, structs.ErrPermissionDenied), must.Sprintf("server %d: %v", i, err))
		must.ErrorContains(t, err, "server certificate")

		var gr structs.GenericResponse
		err = rpcWith(t, clientTLS, tc.Addr(i), "Eval.Ack", &structs.EvalAckRequest{EvalID: "x", Token: "y"}, &gr)
		must.True(t, errors.Is(err, structs.ErrPermissionDenied), must.Sprintf("Eval.Ack on server %d: %v", i, err))
		var pr structs.PlanResponse
		err = rpcWith(t, clientTLS, tc.Addr(i), "Plan.Submit", &structs.PlanRequest{Plan: &structs.Plan{EvalID: "x"}}, &pr)
		must.True(t, errors.Is(err, structs.ErrPermissionDenied), must.Sprintf("Plan.Submit on server %d: %v", i, err))

		dr = structs.EvalDequeueResponse{}
		must.NoError(t, rpcWith(t, serverTLS, tc.Addr(i), "Eval.Dequeue", dequeue, &dr), must.Sprintf("server %d", i))
		must.Nil(t, dr.Eval)
	}

	// Everything else stays open to client certificates.
	var peers []string
	must.NoError(t, rpcWith(t, clientTLS, tc.Addr(leader), "Status.Peers", &structs.GenericRequest{}, &peers))
	must.Len(t, 3, peers)
}

// A server with tls.rpc refuses plaintext, certificates of another CA,
// expired certificates and raft from a non-server certificate.
func TestServers_TLS_RefusesStrangers(t *testing.T) {
	tc := startTLSCluster(t)
	addr := tc.Addr(tc.WaitForLeader())
	var peers []string
	status := &structs.GenericRequest{}

	err := rpcWith(t, nil, addr, "Status.Peers", status, &peers)
	must.True(t, errors.Is(err, pool.ErrTransport), must.Sprintf("plaintext: %v", err))

	foreign := tlstest.NewCA(t).Issue(t, tlsutil.RoleServer, "global", tlstest.Options{})
	foreign.CAFile = tc.ca.CAFile // it trusts us; we must not trust it
	err = rpcWith(t, outgoing(t, foreign), addr, "Status.Peers", status, &peers)
	must.True(t, errors.Is(err, pool.ErrTransport), must.Sprintf("other CA: %v", err))

	expired := tc.ca.Issue(t, tlsutil.RoleServer, "global", tlstest.Options{NotBefore: time.Now().Add(-48 * time.Hour), Validity: 24 * time.Hour})
	err = rpcWith(t, outgoing(t, expired), addr, "Status.Peers", status, &peers)
	must.True(t, errors.Is(err, pool.ErrTransport), must.Sprintf("expired: %v", err))

	// The server's certificate checked against another CA: the client
	// refuses the server, too.
	wrongRoots := tc.client
	wrongRoots.CAFile = tlstest.NewCA(t).CAFile
	err = rpcWith(t, outgoing(t, wrongRoots), addr, "Status.Peers", status, &peers)
	must.ErrorContains(t, err, "unknown authority")

	// Raft with a client certificate: the server hangs up at once.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pool.Dial(ctx, pool.DialInput{Addr: addr, TLS: outgoing(t, tc.client), Kind: pool.RPCRaft})
	must.NoError(t, err)
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = conn.Read(make([]byte, 1))
	must.Error(t, err)
	var netErr interface{ Timeout() bool }
	must.False(t, errors.As(err, &netErr) && netErr.Timeout(), must.Sprintf("raft conn was kept open: %v", err))
}

// Servers sharing a gossip key (server.encrypt) form a cluster; a server
// with another key cannot join their gossip pool.
func TestServers_GossipEncryption(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	sc := testutil.StartServers(t, testutil.ServersConfig{
		N:      3,
		Server: func(i int, c *nomad.Config) { c.SerfEncryptKey = key },
	})
	leader := sc.Leader()
	must.Len(t, 3, leader.Members())

	c := nomad.DefaultConfig()
	c.NodeName = "stranger"
	c.DataDir = t.TempDir()
	c.RPCAddr = &net.TCPAddr{IP: net.ParseIP("127.0.0.1")}
	c.SerfAddr = &net.TCPAddr{IP: net.ParseIP("127.0.0.1")}
	c.SerfEncryptKey = []byte("fedcba9876543210fedcba9876543210")
	c.NumSchedulers = 0
	stranger, err := nomad.NewServer(c)
	must.NoError(t, err)
	t.Cleanup(func() { _ = stranger.Shutdown() })
	n, err := stranger.Join([]string{leader.SerfAddr()})
	must.Error(t, err)
	must.Eq(t, 0, n)
	must.Len(t, 3, leader.Members())
}
