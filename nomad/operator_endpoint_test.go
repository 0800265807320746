package nomad_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil"
	"github.com/nomad-edge/nomad/testutil/fault"
	"github.com/nomad-edge/nomad/testutil/wait"
)

func raftConfig(t *testing.T, s *nomad.Server, stale bool) (*structs.RaftConfigurationResponse, error) {
	t.Helper()
	var reply structs.RaftConfigurationResponse
	args := structs.GenericRequest{QueryOptions: structs.QueryOptions{AllowStale: stale}}
	err := s.RPC("Operator.RaftGetConfiguration", &args, &reply)
	return &reply, err
}

func describePeers(servers []*structs.RaftServer) string {
	var out []string
	for _, s := range servers {
		out = append(out, fmt.Sprintf("%s/%s leader=%v", s.Node, s.Address, s.Leader))
	}
	return fmt.Sprint(out)
}

// `nomad operator raft list-peers` through any server shows every server
// once, named as the gossip pool knows it, with exactly the leader marked;
// asked on a follower the read is answered by the leader (LastContact 0),
// unless stale, and a follower cut off from the leader still answers a
// stale read, which is what an operator diagnosing an outage has.
func TestOperator_RaftGetConfiguration_FromFollower(t *testing.T) {
	sc := testutil.StartServers(t, testutil.ServersConfig{N: 3})
	leader := sc.WaitForLeader()
	follower := (leader + 1) % 3

	var cfg *structs.RaftConfigurationResponse
	wait.Poll(t, 10*time.Second, "every server named in the raft configuration", func() (bool, string) {
		var err error
		cfg, err = raftConfig(t, sc.Servers[follower], false)
		if err != nil {
			return false, err.Error()
		}
		named := len(cfg.Configuration.Servers) == 3
		for _, s := range cfg.Configuration.Servers {
			named = named && s.Node != "(unknown)"
		}
		return named, describePeers(cfg.Configuration.Servers)
	})
	must.True(t, cfg.KnownLeader)
	must.Eq(t, time.Duration(0), cfg.LastContact, must.Sprint("a forwarded read is answered by the leader"))
	must.Positive(t, cfg.Index)

	var leaders []string
	for _, s := range cfg.Configuration.Servers {
		must.True(t, s.Voter)
		must.Eq(t, "3", s.RaftProtocol)
		if s.Leader {
			leaders = append(leaders, s.Address)
		}
	}
	must.Eq(t, []string{sc.Addr(leader)}, leaders)
	ids := make([]string, 0, 3)
	for _, s := range cfg.Configuration.Servers {
		ids = append(ids, s.ID)
	}
	for i, s := range sc.Servers {
		must.SliceContains(t, ids, s.ID(), must.Sprintf("server %d", i))
	}

	stale, err := raftConfig(t, sc.Servers[follower], true)
	must.NoError(t, err)
	must.Positive(t, stale.LastContact, must.Sprint("a stale read is answered by the follower itself"))
	must.SliceLen(t, 3, stale.Configuration.Servers)

	sc.Net.Isolate(sc.Addr(follower), fault.Reset)
	t.Cleanup(func() { sc.Net.Heal(sc.Addr(follower)) })
	wait.Poll(t, 10*time.Second, "the isolated follower's consistent read to fail", func() (bool, string) {
		_, err := raftConfig(t, sc.Servers[follower], false)
		return err != nil, fmt.Sprint(err)
	})
	stale, err = raftConfig(t, sc.Servers[follower], true)
	must.NoError(t, err)
	must.SliceLen(t, 3, stale.Configuration.Servers)
}

// A server that is gone for good is removed from raft by ID or by address
// through a follower, which forwards the change to the leader; a peer that
// is not in the configuration is an ErrUnknownPeer naming what was asked,
// so the HTTP API answers 404 and the operator sees the typo.
func TestOperator_RaftRemovePeer_ThroughFollower(t *testing.T) {
	for _, by := range []string{"id", "address"} {
		t.Run(by, func(t *testing.T) {
			sc := testutil.StartServers(t, testutil.ServersConfig{N: 3})
			leader := sc.WaitForLeader()
			follower, gone := (leader+1)%3, (leader+2)%3
			goneID, goneAddr := sc.Servers[gone].ID(), sc.Addr(gone)
			sc.Stop(gone)

			var reply struct{}
			var err error
			if by == "id" {
				err = sc.Servers[follower].RPC("Operator.RaftRemovePeerByID", &structs.RaftPeerByIDRequest{ID: "no-such-id"}, &reply)
				must.StrContains(t, err.Error(), `id "no-such-id"`)
			} else {
				err = sc.Servers[follower].RPC("Operator.RaftRemovePeerByAddress", &structs.RaftPeerByAddressRequest{Address: "127.0.0.1:1"}, &reply)
				must.StrContains(t, err.Error(), `address "127.0.0.1:1"`)
			}
			must.ErrorIs(t, err, structs.ErrUnknownPeer)

			if by == "id" {
				err = sc.Servers[follower].RPC("Operator.RaftRemovePeerByID", &structs.RaftPeerByIDRequest{ID: goneID}, &reply)
			} else {
				err = sc.Servers[follower].RPC("Operator.RaftRemovePeerByAddress", &structs.RaftPeerByAddressRequest{Address: goneAddr}, &reply)
			}
			must.NoError(t, err)
			cfg, err := raftConfig(t, sc.Servers[leader], false)
			must.NoError(t, err)
			must.SliceLen(t, 2, cfg.Configuration.Servers, must.Sprint(describePeers(cfg.Configuration.Servers)))
			for _, s := range cfg.Configuration.Servers {
				must.NotEq(t, goneID, s.ID)
			}
		})
	}
}

// A removal that names no peer is refused before it reaches raft.
func TestOperator_RaftRemovePeer_MissingPeer(t *testing.T) {
	sc := testutil.StartServers(t, testutil.ServersConfig{N: 1})
	var reply struct{}
	err := sc.Servers[0].RPC("Operator.RaftRemovePeerByID", &structs.RaftPeerByIDRequest{}, &reply)
	must.ErrorIs(t, err, structs.ErrMissingField)
	err = sc.Servers[0].RPC("Operator.RaftRemovePeerByAddress", &structs.RaftPeerByAddressRequest{}, &reply)
	must.ErrorIs(t, err, structs.ErrMissingField)
}

// `nomad server members` on any server lists every server of the gossip
// pool with upstream's tags, and names the answering server.
func TestStatus_Members(t *testing.T) {
	sc := testutil.StartServers(t, testutil.ServersConfig{N: 3})
	leader := sc.WaitForLeader()
	follower := (leader + 1) % 3

	var reply structs.ServerMembersResponse
	wait.Poll(t, 10*time.Second, "three alive members", func() (bool, string) {
		must.NoError(t, sc.Servers[follower].RPC("Status.Members", &structs.GenericRequest{}, &reply))
		alive := 0
		var seen []string
		for _, m := range reply.Members {
			seen = append(seen, m.Name+"="+m.Status)
			if m.Status == "alive" {
				alive++
			}
		}
		return alive == 3, fmt.Sprint(seen)
	})
	must.Eq(t, fmt.Sprintf("server-%d", follower), reply.ServerName)
	must.Eq(t, "global", reply.ServerRegion)
	must.Eq(t, "dc1", reply.ServerDC)
	for _, m := range reply.Members {
		must.Eq(t, "nomad", m.Tags["role"])
		must.Eq(t, "global", m.Tags["region"])
		must.NotEq(t, "", m.Tags["id"])
		must.NotEq(t, "", m.Tags["port"])
		must.Eq(t, "127.0.0.1", m.Addr)
		must.Positive(t, m.Port)
		must.Positive(t, m.ProtocolCur)
	}
}
