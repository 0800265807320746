package agent

import (
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/nomad-edge/nomad/acl"
	"github.com/nomad-edge/nomad/nomad"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// statusLeader handles GET /v1/status/leader: the leader's RPC address as a
// JSON string, as the leader answers it (Status.Leader forwards). While
// there is no leader the request is held, as upstream's is, and then fails
// with "No cluster leader" (500).
func (s *HTTPServer) statusLeader(w http.ResponseWriter, r *http.Request) (any, error) {
	var args structs.GenericRequest
	if err := parseQueryOptions(r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var leader string
	if err := s.call(r, "Status.Leader", &args, &leader); err != nil {
		return nil, err
	}
	return leader, nil
}

// regions handles GET /v1/regions: the regions of the servers' gossip pool
// (every region federated with this agent's), sorted, as upstream lists them.
// A client-only agent asks its servers.
func (s *HTTPServer) regions(w http.ResponseWriter, r *http.Request) (any, error) {
	var out []string
	args := &structs.GenericRequest{QueryOptions: structs.QueryOptions{AllowStale: true}}
	if err := s.call(r, "Region.List", args, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// agentSelf is the body of /v1/agent/self. Upstream's clients read the
// agent's name, region and datacenter from config, and its member entry.
type agentSelf struct {
	Config *Config                      `json:"config"`
	Member agentMember                  `json:"member"`
	Stats  map[string]map[string]string `json:"stats"`
}

// agentMember describes the agent as a cluster member, in upstream's shape.
type agentMember struct {
	Name   string
	Addr   string
	Port   uint16
	Tags   map[string]string
	Status string
}

// agentSelf handles GET /v1/agent/self.
func (s *HTTPServer) agentSelf(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := s.authorize(r, (*acl.ACL).AllowAgentRead, "agent read"); err != nil {
		return nil, err
	}
	cfg := s.agent.config
	m := agentMember{
		Name:   cfg.nodeName() + "." + cfg.Region,
		Status: "alive",
		Tags: map[string]string{
			"region": cfg.Region,
			"dc":     cfg.Datacenter,
			"build":  Version,
		},
	}
	if srv := s.agent.server; srv != nil {
		m.Tags["role"] = "nomad"
		if addr, ok := srv.RPCAddr().(*net.TCPAddr); ok {
			m.Addr = addr.IP.String()
			m.Port = uint16(addr.Port)
			m.Tags["port"] = strconv.Itoa(addr.Port)
		}
	}
	stats := map[string]map[string]string{
		"nomad": {"server": strconv.FormatBool(s.agent.server != nil), "leader_addr": ""},
	}
	if srv := s.agent.server; srv != nil {
		stats["nomad"]["leader_addr"] = srv.Leader()
		stats["raft"] = srv.RaftStats()
	}
	if c := s.agent.client; c != nil {
		stats["client"] = map[string]string{
			"node_id":         c.NodeID(),
			"known_servers":   s.agent.knownServers(),
			"num_allocations": strconv.Itoa(c.NumAllocs()),
			"heartbeat_ttl":   c.HeartbeatTTL().String(),
		}
	}
	return agentSelf{Config: cfg, Member: m, Stats: stats}, nil
}

// healthStatus is one role's entry in /v1/agent/health.
type healthStatus struct {
	Ok      bool   `json:"ok"`
	Message string `json:"message"`
}

// agentHealth handles GET /v1/agent/health: 200 when every enabled role is
// working (the server knows a leader, the client is registered), 500
// otherwise, with the same body either way, as upstream.
func (s *HTTPServer) agentHealth(w http.ResponseWriter, r *http.Request) (any, error) {
	out := map[string]healthStatus{}
	healthy := true
	if srv := s.agent.server; srv != nil {
		h := healthStatus{Ok: true, Message: "ok"}
		if srv.Leader() == "" {
			h = healthStatus{Message: "no known cluster leader"}
			healthy = false
		}
		out["server"] = h
	}
	if c := s.agent.client; c != nil {
		h := healthStatus{Ok: true, Message: "ok"}
		select {
		case <-c.Ready():
		default:
			h = healthStatus{Message: "client not yet registered with the servers"}
			healthy = false
		}
		out["client"] = h
	}
	if !healthy {
		return withStatus{Code: http.StatusInternalServerError, Body: out}, nil
	}
	return out, nil
}

// knownServers is what the client talks to: this agent's server, or the
// configured remote servers.
func (a *Agent) knownServers() string { return strings.Join(a.serverAddrs(), ",") }

// serverAddrs lists the RPC addresses this agent reaches the servers at:
// its own server's, or a client-only agent's configured servers.
func (a *Agent) serverAddrs() []string {
	if a.server != nil {
		return []string{a.server.RPCAddr().String()}
	}
	return a.config.Client.serverAddrs()
}

// statusPeers handles GET /v1/status/peers: the RPC addresses of the raft
// peers.
func (s *HTTPServer) statusPeers(w http.ResponseWriter, r *http.Request) (any, error) {
	var args structs.GenericRequest
	if err := parseQueryOptions(r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var peers []string
	if err := s.call(r, "Status.Peers", &args, &peers); err != nil {
		return nil, err
	}
	return nonNil(peers), nil
}

// agentMembers handles GET /v1/agent/members: a server's view of the
// servers' gossip pool. A client-only agent asks one of its servers, as
// upstream's does.
func (s *HTTPServer) agentMembers(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := s.authorize(r, (*acl.ACL).AllowNodeRead, "node read"); err != nil {
		return nil, err
	}
	var args structs.GenericRequest
	if err := parseQueryOptions(r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var reply structs.ServerMembersResponse
	if err := s.call(r, "Status.Members", &args, &reply); err != nil {
		return nil, err
	}
	reply.Members = nonNil(reply.Members)
	return reply, nil
}

// errNotServer answers the agent endpoints that act on this agent's own
// server (join, force-leave) on a client-only agent, with upstream's 501.
func errNotServer(what string) error {
	return codedErrorf(http.StatusNotImplemented, "this agent is not a server: send %s to a server agent's HTTP API", what)
}

// joinResult is the body of /v1/agent/join, upstream's: a failed join is
// an answer (how many were reached, and why not more), not an HTTP error.
type joinResult struct {
	NumJoined int    `json:"num_joined"`
	Error     string `json:"error"`
}

// agentJoin handles PUT/POST /v1/agent/join?address=...: this server joins
// the gossip pool of the servers at the addresses (their serf ports).
func (s *HTTPServer) agentJoin(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := s.authorize(r, (*acl.ACL).AllowAgentWrite, "agent write"); err != nil {
		return nil, err
	}
	srv := s.agent.server
	if srv == nil {
		return nil, errNotServer("join requests")
	}
	addrs := r.URL.Query()["address"]
	if len(addrs) == 0 {
		return nil, codedErrorf(http.StatusBadRequest, "missing address to join: add ?address=host:port of a server's serf port")
	}
	for i, a := range addrs {
		addrs[i] = serfJoinAddr(a)
	}
	n, err := srv.Join(addrs)
	res := joinResult{NumJoined: n}
	if err != nil {
		res.Error = err.Error()
	}
	return res, nil
}

// agentForceLeave handles PUT/POST /v1/agent/force-leave?node=...: a
// failed server is marked left, so the leader drops it from raft now
// instead of waiting for it to come back; with prune=1 (upstream's
// official client sends 1) it is also forgotten at once.
func (s *HTTPServer) agentForceLeave(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := s.authorize(r, (*acl.ACL).AllowOperatorWrite, "operator write"); err != nil {
		return nil, err
	}
	srv := s.agent.server
	if srv == nil {
		return nil, errNotServer("force-leave requests")
	}
	q := r.URL.Query()
	node := q.Get("node")
	if node == "" {
		return nil, codedErrorf(http.StatusBadRequest, "missing node to force leave: add ?node=<member name>")
	}
	prune, err := boolParam(r, "prune")
	if err != nil {
		return nil, err
	}
	return nil, srv.ForceLeave(node, nomad.ForceLeaveOptions{Prune: prune})
}

// agentServers handles GET /v1/agent/servers: the RPC addresses this agent
// reaches the servers at.
func (s *HTTPServer) agentServers(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := s.authorize(r, (*acl.ACL).AllowAgentRead, "agent read"); err != nil {
		return nil, err
	}
	return s.agent.serverAddrs(), nil
}
