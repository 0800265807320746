package testutil_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/helper/pool"
	"github.com/nomad-edge/nomad/nomad"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// serverOnlyCall is one RPC only servers may make, its args carrying
// token as the caller's credential.
type serverOnlyCall struct {
	method string
	args   func(token string) any
	reply  func() any
}

func serverOnlyCalls() []serverOnlyCall {
	w := func(token string) structs.WriteRequest { return structs.WriteRequest{AuthToken: token} }
	generic := func() any { return &structs.GenericResponse{} }
	ev := &structs.Evaluation{ID: "8e1e7d4c-0000-4000-8000-000000000001", Namespace: "default", JobID: "x", Status: structs.EvalStatusPending}
	return []serverOnlyCall{
		{"Eval.Dequeue", func(t string) any {
			return &structs.EvalDequeueRequest{Schedulers: []string{structs.JobTypeService, structs.JobTypeBatch}, Timeout: 10 * time.Millisecond, WriteRequest: w(t)}
		}, func() any { return &structs.EvalDequeueResponse{} }},
		{"Eval.Ack", func(t string) any { return &structs.EvalAckRequest{EvalID: ev.ID, Token: "y", WriteRequest: w(t)} }, generic},
		{"Eval.Nack", func(t string) any { return &structs.EvalAckRequest{EvalID: ev.ID, Token: "y", WriteRequest: w(t)} }, generic},
		{"Eval.Update", func(t string) any {
			return &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{ev}, WriteRequest: w(t)}
		}, generic},
		{"Eval.Create", func(t string) any {
			return &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{ev}, WriteRequest: w(t)}
		}, generic},
		{"Eval.Reblock", func(t string) any {
			return &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{ev}, WriteRequest: w(t)}
		}, generic},
		{"Plan.Submit", func(t string) any {
			return &structs.PlanRequest{Plan: &structs.Plan{EvalID: ev.ID}, WriteRequest: w(t)}
		},
			func() any { return &structs.PlanResponse{} }},
		{"Keyring.Get", func(t string) any {
			return &structs.KeyringGetRootKeyRequest{KeyID: "k", QueryOptions: structs.QueryOptions{AuthToken: t}}
		}, func() any { return &structs.KeyringGetRootKeyResponse{} }},
		{"Status.HasNodeConn", func(t string) any {
			return &structs.NodeConnRequest{NodeID: "8e1e7d4c-0000-4000-8000-000000000002", QueryOptions: structs.QueryOptions{AuthToken: t}}
		}, func() any { return &structs.NodeConnResponse{} }},
	}
}

// wrongProver proves a server identity that is not the cluster's: a
// server of another cluster, or a guess.
type wrongProver struct{}

func (wrongProver) HasServerIdentity() bool { return true }
func (wrongProver) ServerProof(nonce []byte) []byte {
	return pool.ServerProof([]byte("not the cluster's secret"), nonce)
}

// raftRefused dials raft on addr with prover (nil: none) and reports
// whether the server hung up rather than kept the connection for raft.
func raftRefused(t *testing.T, addr string, prover pool.ServerProver) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pool.Dial(ctx, pool.DialInput{Addr: addr, Kind: pool.RPCRaft, Prover: prover})
	if err != nil {
		return true
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err = conn.Read(make([]byte, 1))
	var netErr interface{ Timeout() bool }
	return err != nil && !(errors.As(err, &netErr) && netErr.Timeout())
}

// Without TLS (the default), the RPCs that hand out evaluations, take
// plans, copy root keys and carry raft refuse a registered client (with
// its node secret) and an outsider, on the leader and on a follower
// (which must not forward them with its own identity); a server of
// another cluster is hung up on. Anyone who reaches the RPC port could
// otherwise take the cluster's work or its keys (issue 26, item 3).
func TestServers_ServerOnlyRPCs_RefuseClientsAndOutsiders(t *testing.T) {
	sc := testutil.StartServers(t, testutil.ServersConfig{N: 3})
	leader := sc.WaitForLeader()
	follower := (leader + 1) % 3
	wait.Poll(t, 10*time.Second, "every server holds the servers' identity", func() (bool, string) {
		for i, s := range sc.Servers {
			if id, _ := s.State().ServerIdentity(nil); id == nil {
				return false, fmt.Sprintf("server %d has none", i)
			}
		}
		return true, ""
	})
	cl, _ := sc.AddClient("edge-1")
	node, err := sc.Leader().State().NodeByID(nil, cl.NodeID())
	must.NoError(t, err)
	must.NotNil(t, node)

	for _, i := range []int{leader, follower} {
		for _, call := range serverOnlyCalls() {
			for who, token := range map[string]string{"outsider": "", "client": node.SecretID} {
				err := rpcWith(t, nil, sc.Addr(i), call.method, call.args(token), call.reply())
				must.True(t, errors.Is(err, structs.ErrPermissionDenied),
					must.Sprintf("%s calling %s on server %d: %v", who, call.method, i, err))
				must.ErrorContains(t, err, "servers' identity")
			}
		}
		must.True(t, raftRefused(t, sc.Addr(i), nil), must.Sprintf("raft from an outsider kept on server %d", i))
		must.True(t, raftRefused(t, sc.Addr(i), wrongProver{}), must.Sprintf("raft with a wrong proof kept on server %d", i))

		p := pool.NewPool(pool.Config{Prover: wrongProver{}, DialTimeout: 5 * time.Second, CallTimeout: 5 * time.Second})
		var dr structs.EvalDequeueResponse
		err := p.RPC(sc.Addr(i), "Eval.Dequeue", serverOnlyCalls()[0].args(""), &dr, 0)
		p.Shutdown()
		must.True(t, errors.Is(err, pool.ErrTransport), must.Sprintf("a wrong proof on server %d: %v", i, err))
	}

	// Everything else stays open to clients.
	var peers []string
	must.NoError(t, rpcWith(t, nil, sc.Addr(follower), "Status.Peers", &structs.GenericRequest{}, &peers))
	must.Len(t, 3, peers)
}

// Three plaintext servers whose only workers are on the followers
// schedule a job: the followers' workers prove the servers' identity to
// the leader's broker and plan queue (Eval.Dequeue, Plan.Submit, Eval.Ack
// forwarded), both followers having been restarted (they prove the
// identity kept in their data dir before their log is replayed).
func TestServers_ServerOnlyRPCs_FollowerWorkersSchedule(t *testing.T) {
	workers := map[int]bool{}
	sc := testutil.StartServers(t, testutil.ServersConfig{N: 3, Server: func(i int, c *nomad.Config) {
		c.NumSchedulers = 0
		if workers[i] {
			c.NumSchedulers = 1
		}
	}})
	leader := sc.WaitForLeader()
	for _, i := range []int{(leader + 1) % 3, (leader + 2) % 3} {
		workers[i] = true
		sc.Stop(i)
		sc.Restart(i)
		must.Eq(t, leader, sc.WaitForLeader(), must.Sprint("the leader changed; the test needs it to keep no workers"))
	}

	job := registerJob(t, sc.Servers[leader])
	_, _ = sc.AddClient("edge-1")
	wait.Poll(t, 20*time.Second, "the followers' workers place the job", func() (bool, string) {
		allocs, err := sc.Servers[leader].State().AllocsByJob(nil, job.Namespace, job.ID, false)
		must.NoError(t, err)
		return len(allocs) > 0, "no allocation yet"
	})
}
