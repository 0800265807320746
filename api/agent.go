package api

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
)

// Agent is the handle on the endpoints of the agent the client talks to.
type Agent struct {
	client *Client
}

// Agent returns the handle on the agent endpoints.
func (c *Client) Agent() *Agent { return &Agent{client: c} }

// AgentMember is one member of the servers' gossip pool. Tags carry what
// the server advertises: "role", "region", "dc", "build", "port" (RPC),
// "rpc_addr", "raft_vsn", "id", "expect" or "bootstrap".
type AgentMember struct {
	Name        string
	Addr        string
	Port        uint16
	Tags        map[string]string
	Status      string
	ProtocolMin uint8
	ProtocolMax uint8
	ProtocolCur uint8
	DelegateMin uint8
	DelegateMax uint8
	DelegateCur uint8
}

// ServerMembers is an answering server's view of the gossip pool, with its
// own name, region and datacenter.
type ServerMembers struct {
	ServerName   string
	ServerRegion string
	ServerDC     string
	Members      []*AgentMember
}

// SortAgentMembers orders members by region, datacenter and name, the
// order `nomad server members` prints them in.
func SortAgentMembers(m []*AgentMember) {
	sort.SliceStable(m, func(i, j int) bool {
		a, b := m[i], m[j]
		if a.Tags["region"] != b.Tags["region"] {
			return a.Tags["region"] < b.Tags["region"]
		}
		if a.Tags["dc"] != b.Tags["dc"] {
			return a.Tags["dc"] < b.Tags["dc"]
		}
		return a.Name < b.Name
	})
}

// Members returns the servers' gossip pool (GET /v1/agent/members). A
// client-only agent asks one of its servers.
func (a *Agent) Members() (*ServerMembers, error) { return a.MembersOpts(nil) }

// MembersOpts is Members with query options.
func (a *Agent) MembersOpts(q *QueryOptions) (*ServerMembers, error) {
	var out ServerMembers
	if _, err := a.client.query("/v1/agent/members", &out, q); err != nil {
		return nil, err
	}
	return &out, nil
}

// joinResponse is the body of /v1/agent/join.
type joinResponse struct {
	NumJoined int    `json:"num_joined"`
	Error     string `json:"error"`
}

// Join asks the agent's server to join the gossip pool of the servers at
// addrs (host or host:port of their serf ports) and returns how many it
// reached. Some may have been reached although err is not nil.
func (a *Agent) Join(addrs ...string) (int, error) {
	if len(addrs) == 0 {
		return 0, errors.New("no address to join")
	}
	v := url.Values{"address": addrs}
	var resp joinResponse
	if _, err := a.client.write(http.MethodPut, "/v1/agent/join?"+v.Encode(), nil, &resp, nil); err != nil {
		return 0, fmt.Errorf("failed joining: %w", err)
	}
	if resp.Error != "" {
		return resp.NumJoined, fmt.Errorf("failed joining: %s", resp.Error)
	}
	return resp.NumJoined, nil
}

// ForceLeave marks the failed server named node (its gossip member name,
// e.g. "server-2.global") as left, so the leader removes it from raft now.
func (a *Agent) ForceLeave(node string) error {
	return a.ForceLeaveWithOptions(node, ForceLeaveOpts{})
}

// ForceLeaveOpts tune Agent.ForceLeaveWithOptions.
type ForceLeaveOpts struct {
	// Prune also forgets the member at once instead of listing it as left.
	Prune bool
}

// ForceLeaveWithOptions is ForceLeave with options.
func (a *Agent) ForceLeaveWithOptions(node string, opts ForceLeaveOpts) error {
	v := url.Values{"node": {node}}
	if opts.Prune {
		v.Set("prune", "1")
	}
	_, err := a.client.write(http.MethodPut, "/v1/agent/force-leave?"+v.Encode(), nil, nil, nil)
	return err
}

// Servers returns the RPC addresses the agent reaches the servers at
// (GET /v1/agent/servers).
func (a *Agent) Servers() ([]string, error) {
	var out []string
	if _, err := a.client.query("/v1/agent/servers", &out, nil); err != nil {
		return nil, err
	}
	return out, nil
}

// AgentSelf is the body of /v1/agent/self: the agent's configuration, its
// gossip member, and stats ("client" holds "node_id" on a client agent).
type AgentSelf struct {
	Config map[string]any               `json:"config"`
	Member AgentMember                  `json:"member"`
	Stats  map[string]map[string]string `json:"stats"`
}

// Self returns what the agent says about itself (GET /v1/agent/self).
func (a *Agent) Self() (*AgentSelf, error) {
	var out AgentSelf
	if _, err := a.client.query("/v1/agent/self", &out, nil); err != nil {
		return nil, err
	}
	return &out, nil
}
