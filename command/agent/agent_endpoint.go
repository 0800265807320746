package agent

import (
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// statusLeader handles GET /v1/status/leader: the leader's RPC address as a
// JSON string, or "" while there is none (scripts poll it to wait for a
// cluster to come up, so no leader is an answer, not an error).
func (s *HTTPServer) statusLeader(w http.ResponseWriter, r *http.Request) (any, error) {
	var args structs.GenericRequest
	if err := parseQueryOptions(r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var leader string
	if err := s.rpc.RPC("Status.Leader", &args, &leader); err != nil && !errors.Is(err, structs.ErrNoLeader) {
		return nil, err
	}
	return leader, nil
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
func (a *Agent) knownServers() string {
	if a.server != nil {
		return a.server.RPCAddr().String()
	}
	return strings.Join(a.config.Client.Servers, ",")
}
