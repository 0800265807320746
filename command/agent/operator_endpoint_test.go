package agent_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/nomad-edge/nomad/testutil/wait"

	"github.com/hashicorp/go-hclog"
	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// The official client reads the cluster-membership endpoints of a dev
// agent: its one server in the gossip pool, the raft peers, the raft
// configuration with the leader marked, and the servers it reaches.
// Decoding through upstream's types proves the wire shapes.
func TestHTTP_MembershipOfficialClientCompat(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	c := officialClient(t, a)
	rpcAddr := a.Server().RPCAddr().String()

	members, err := c.Agent().Members()
	must.NoError(t, err)
	must.Eq(t, a.Config().NodeName, members.ServerName)
	must.Eq(t, "global", members.ServerRegion)
	must.Eq(t, "dc1", members.ServerDC)
	must.SliceLen(t, 1, members.Members)
	m := members.Members[0]
	must.Eq(t, a.Config().NodeName+".global", m.Name)
	must.Eq(t, "alive", m.Status)
	must.Eq(t, "127.0.0.1", m.Addr)
	must.Eq(t, "nomad", m.Tags["role"])
	must.Eq(t, "dc1", m.Tags["dc"])
	must.Eq(t, agent.Version, m.Tags["build"])
	must.Eq(t, "3", m.Tags["raft_vsn"])
	must.Eq(t, a.Server().ID(), m.Tags["id"])

	peers, err := c.Status().Peers()
	must.NoError(t, err)
	must.Eq(t, []string{rpcAddr}, peers)

	cfg, err := c.Operator().RaftGetConfiguration(nil)
	must.NoError(t, err)
	must.SliceLen(t, 1, cfg.Servers)
	s := cfg.Servers[0]
	must.Eq(t, a.Server().ID(), s.ID)
	must.Eq(t, m.Name, s.Node)
	must.Eq(t, rpcAddr, s.Address)
	must.True(t, s.Leader)
	must.True(t, s.Voter)
	must.Eq(t, "3", s.RaftProtocol)
	stale, err := c.Operator().RaftGetConfiguration(&nomadapi.QueryOptions{AllowStale: true})
	must.NoError(t, err)
	must.Eq(t, cfg.Servers, stale.Servers)

	servers, err := c.Agent().Servers()
	must.NoError(t, err)
	must.Eq(t, []string{rpcAddr}, servers)

	// Every field we send is one upstream's types know.
	strictGet(t, a.HTTPAddr+"/v1/agent/members", new(nomadapi.ServerMembers))
	strictGet(t, a.HTTPAddr+"/v1/operator/raft/configuration", new(nomadapi.RaftConfiguration))

	// The raft configuration is a read like any other: upstream's headers.
	resp, err := http.Get(a.HTTPAddr + "/v1/operator/raft/configuration")
	must.NoError(t, err)
	resp.Body.Close()
	must.Eq(t, "true", resp.Header.Get("X-Nomad-KnownLeader"))
	must.Eq(t, "0", resp.Header.Get("X-Nomad-LastContact"))
	must.NotEq(t, "", resp.Header.Get("X-Nomad-Index"))
}

// Removing a raft peer takes exactly one of ?id and ?address, and a peer
// that is not in the configuration is a 404 naming it: an operator's typo
// must not read as a server error, nor remove anything.
func TestHTTP_RaftPeerBadInput(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	c := officialClient(t, a)

	code, body := rawRequest(t, http.MethodDelete, a.HTTPAddr+"/v1/operator/raft/peer", "")
	must.Eq(t, http.StatusBadRequest, code)
	must.StrContains(t, body, "Must specify either ?id")
	code, body = rawRequest(t, http.MethodDelete, a.HTTPAddr+"/v1/operator/raft/peer?id=a&address=b", "")
	must.Eq(t, http.StatusBadRequest, code)
	must.StrContains(t, body, "only one of ?id or ?address")

	err := c.Operator().RaftRemovePeerByID("no-such-id", nil)
	status, msg := statusOf(t, err)
	must.Eq(t, http.StatusNotFound, status)
	must.StrContains(t, msg, `id "no-such-id" is not in the raft configuration`)
	err = c.Operator().RaftRemovePeerByAddress("127.0.0.1:1", nil)
	status, _ = statusOf(t, err)
	must.Eq(t, http.StatusNotFound, status)

	peers, err := c.Status().Peers()
	must.NoError(t, err)
	must.SliceLen(t, 1, peers)

	code, body = rawRequest(t, http.MethodGet, a.HTTPAddr+"/v1/operator/raft/configuration?stale=maybe", "")
	must.Eq(t, http.StatusBadRequest, code)
	must.StrContains(t, body, `Invalid stale "maybe"`)
	code, _ = rawRequest(t, http.MethodPut, a.HTTPAddr+"/v1/agent/join", "")
	must.Eq(t, http.StatusBadRequest, code)
	code, body = rawRequest(t, http.MethodPut, a.HTTPAddr+"/v1/agent/force-leave?node=x&prune=maybe", "")
	must.Eq(t, http.StatusBadRequest, code)
	must.StrContains(t, body, `Invalid prune value "maybe"`)
}

// startServerAgent starts a production (non-dev) server agent on loopback
// with fresh ports, raft on disk and a serf pool, expecting expect servers.
func startServerAgent(t *testing.T, name string, expect int) *agent.Agent {
	t.Helper()
	cfg := agent.DefaultConfig()
	cfg.BindAddr = "127.0.0.1"
	cfg.Ports.HTTP, cfg.Ports.RPC, cfg.Ports.Serf = 0, 0, 0
	cfg.DataDir = t.TempDir()
	cfg.NodeName = name
	cfg.Server.Enabled = true
	cfg.Server.BootstrapExpect = expect
	cfg.Server.NumSchedulers = 1
	a, err := agent.NewAgent(cfg, hclog.NewNullLogger())
	must.NoError(t, err)
	t.Cleanup(func() { _ = a.Shutdown() })
	return a
}

func apiFor(t *testing.T, a *agent.Agent) *nomadapi.Client {
	t.Helper()
	c, err := nomadapi.NewClient(&nomadapi.Config{Address: "http://" + a.HTTPAddr().String()})
	must.NoError(t, err)
	return c
}

// Two servers expecting each other form a cluster once one is told to join
// the other through PUT /v1/agent/join (`nomad server join`): both appear
// in the gossip pool and in raft, one leading. When one then dies,
// force-leave marks it left at once. A client-only agent answers the
// membership reads by asking its servers, and refuses join and force-leave
// with 501, as upstream's does: it has no gossip pool of its own.
func TestHTTP_JoinMembersForceLeave(t *testing.T) {
	a1 := startServerAgent(t, "s1", 2)
	a2 := startServerAgent(t, "s2", 2)
	c1, c2 := apiFor(t, a1), apiFor(t, a2)

	n, err := c2.Agent().Join(a1.Server().SerfAddr())
	must.NoError(t, err)
	must.Eq(t, 1, n)

	wait.Poll(t, 30*time.Second, "a leader over two raft voters", func() (bool, string) {
		cfg, err := c1.Operator().RaftGetConfiguration(nil)
		if err != nil {
			return false, err.Error()
		}
		leaders := 0
		for _, s := range cfg.Servers {
			if s.Leader {
				leaders++
			}
		}
		return len(cfg.Servers) == 2 && leaders == 1, fmt.Sprintf("%d servers, %d leaders", len(cfg.Servers), leaders)
	})
	members, err := c2.Agent().Members()
	must.NoError(t, err)
	must.Eq(t, "s2", members.ServerName)
	names := map[string]string{}
	for _, m := range members.Members {
		names[m.Name] = m.Status
	}
	must.Eq(t, map[string]string{"s1.global": "alive", "s2.global": "alive"}, names)

	// A client-only agent asks its server for the membership reads.
	cc := agent.DefaultConfig()
	cc.BindAddr = "127.0.0.1"
	cc.Ports.HTTP = 0
	cc.DataDir = t.TempDir()
	cc.NodeName = "edge-1"
	cc.Client.Enabled = true
	cc.Client.Servers = []string{a1.Server().RPCAddr().String()}
	ca, err := agent.NewAgent(cc, hclog.NewNullLogger())
	must.NoError(t, err)
	t.Cleanup(func() { _ = ca.Shutdown() })
	cl := apiFor(t, ca)
	viaClient, err := cl.Agent().Members()
	must.NoError(t, err)
	must.Eq(t, "s1", viaClient.ServerName)
	must.SliceLen(t, 2, viaClient.Members)
	peers, err := cl.Status().Peers()
	must.NoError(t, err)
	must.SliceLen(t, 2, peers)
	cfg, err := cl.Operator().RaftGetConfiguration(nil)
	must.NoError(t, err)
	must.SliceLen(t, 2, cfg.Servers)
	servers, err := cl.Agent().Servers()
	must.NoError(t, err)
	must.Eq(t, cc.Client.Servers, servers)
	_, err = cl.Agent().Join(a1.Server().SerfAddr())
	must.StrContains(t, err.Error(), "501")
	status, _ := statusOf(t, cl.Agent().ForceLeave("s2.global"))
	must.Eq(t, http.StatusNotImplemented, status)

	// s2 dies without leaving; force-leave marks it left on s1.
	must.NoError(t, a2.Shutdown())
	wait.Poll(t, 30*time.Second, "s1 to see s2 fail", func() (bool, string) {
		status := memberStatus(t, c1, "s2.global")
		return status == "failed", status
	})
	must.NoError(t, c1.Agent().ForceLeave("s2.global"))
	wait.Poll(t, 10*time.Second, "s2 marked left", func() (bool, string) {
		status := memberStatus(t, c1, "s2.global")
		return status == "left", status
	})
	// -prune (the official client sends prune=1) forgets it at once
	// instead of listing it as left until the reaper runs.
	must.NoError(t, c1.Agent().ForceLeaveWithOptions("s2.global", nomadapi.ForceLeaveOpts{Prune: true}))
	// Serf erases the pruned member on its own goroutine, so wait for it.
	wait.Poll(t, 10*time.Second, "s2 pruned", func() (bool, string) {
		status := memberStatus(t, c1, "s2.global")
		return status == "absent", status
	})
}

func memberStatus(t *testing.T, c *nomadapi.Client, name string) string {
	t.Helper()
	members, err := c.Agent().Members()
	must.NoError(t, err)
	for _, m := range members.Members {
		if m.Name == name {
			return m.Status
		}
	}
	return "absent"
}

// strictGet decodes the body of GET url into out, failing on any field out
// does not have.
func strictGet(t *testing.T, url string, out any) {
	t.Helper()
	resp, err := http.Get(url)
	must.NoError(t, err)
	defer resp.Body.Close()
	must.Eq(t, http.StatusOK, resp.StatusCode)
	dec := json.NewDecoder(resp.Body)
	dec.DisallowUnknownFields()
	must.NoError(t, dec.Decode(out), must.Sprintf("decoding %s into %T", url, out))
}
