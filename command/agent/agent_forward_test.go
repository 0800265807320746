package agent_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// /v1/agent/host describes the agent's host in upstream's shape, secrets
// in the environment redacted; named by ?server_id= (itself here) the
// answer carries the name, as upstream's.
func TestHTTP_AgentHost(t *testing.T) {
	t.Setenv("EDGE_TEST_API_TOKEN", "hunter2")
	t.Setenv("EDGE_TEST_SITE", "north-1")
	a := agenttest.NewDevAgent(t, nil)

	code, body := rawRequest(t, http.MethodGet, a.HTTPAddr+"/v1/agent/host", "")
	must.Eq(t, http.StatusOK, code, must.Sprint(body))
	var host agent.HostData
	must.NoError(t, json.Unmarshal([]byte(body), &host))
	must.StrContains(t, host.OS, "Linux")
	must.Eq(t, "<redacted>", host.Environment["EDGE_TEST_API_TOKEN"])
	must.Eq(t, "north-1", host.Environment["EDGE_TEST_SITE"])
	must.MapContainsKey(t, host.Disk, "/")
	must.Positive(t, host.Disk["/"].DiskMB)
	var lo map[string]string
	for _, n := range host.Network {
		if n["address"] == "127.0.0.1" {
			lo = n
		}
	}
	must.NotNil(t, lo, must.Sprintf("loopback among %v", host.Network))
	must.Eq(t, "IPv4", lo["type"])
	must.Eq(t, "8", lo["mask_bits"])
	must.Eq(t, `"tcp4" ""`, lo["DialStream"])

	c, err := nomadapi.NewClient(&nomadapi.Config{Address: a.HTTPAddr})
	must.NoError(t, err)
	resp := hostOfServer(t, c)
	must.Eq(t, "<redacted>", resp.HostData.Environment["EDGE_TEST_API_TOKEN"])

	for _, tc := range []struct {
		query string
		code  int
		want  string
	}{
		{"server_id=nowhere", http.StatusInternalServerError, "unknown Nomad server nowhere"},
		{"node_id=00000000-0000-0000-0000-000000000000", http.StatusNotFound, `Unknown node "00000000-0000-0000-0000-000000000000"`},
		{"node_id=a&server_id=b", http.StatusBadRequest, "Can only forward to either client node or server"},
	} {
		code, body := rawRequest(t, http.MethodGet, a.HTTPAddr+"/v1/agent/host?"+tc.query, "")
		must.Eq(t, tc.code, code, must.Sprint(tc.query))
		must.StrContains(t, body, tc.want)
	}
}

// hostOfServer asks c's agent for the host of the first server it lists,
// by ?server_id=, and checks the answer carries its name.
func hostOfServer(t *testing.T, c *nomadapi.Client) *nomadapi.HostDataResponse {
	t.Helper()
	members, err := c.Agent().Members()
	must.NoError(t, err)
	name := members.Members[0].Name
	resp, err := c.Agent().Host(name, "", nil)
	must.NoError(t, err)
	must.Eq(t, name, resp.AgentID)
	must.NotNil(t, resp.HostData)
	return resp
}

// With ACLs on, the host's description needs agent:read, as upstream's.
func TestHTTP_AgentHost_NeedsAgentRead(t *testing.T) {
	a := agenttest.NewDevAgent(t, func(c *agent.Config) { c.ACL = &agent.ACLConfig{Enabled: true} })
	code, body := rawRequest(t, http.MethodGet, a.HTTPAddr+"/v1/agent/host", "")
	must.Eq(t, http.StatusForbidden, code, must.Sprint(body))
}

// A node reached only through its session answers /v1/agent/host,
// /v1/agent/pprof and /v1/agent/monitor named by ?node_id=: the server
// passes them on (the node's own HTTP API is closed), and the node makes
// its own checks (profiles need its enable_debug).
func TestHTTP_AgentRoutesForwardedToNode(t *testing.T) {
	ec := newEdgeCluster(t, func(c *agent.Config) { c.EnableDebug = c.Server != nil && c.Server.Enabled })
	id := ec.edge.Client().NodeID()
	base := ec.server.HTTPAddr + "/v1/agent/"

	resp, err := ec.api.Agent().Host("", id, nil)
	must.NoError(t, err)
	must.Eq(t, id, resp.AgentID)
	must.NotNil(t, resp.HostData)
	must.MapContainsKey(t, resp.HostData.Disk, "/")

	code, body := rawRequest(t, http.MethodGet, base+"pprof/cmdline", "")
	must.Eq(t, http.StatusOK, code, must.Sprint("the server has enable_debug: ", body))
	code, body = rawRequest(t, http.MethodGet, base+"pprof/cmdline?node_id="+id, "")
	must.Eq(t, http.StatusForbidden, code, must.Sprint(body))
	must.StrContains(t, body, "enable_debug")

	// The node's log, not the server's: each agent logs the requests it
	// serves at trace. A job list only the server serves, then a host
	// request the node serves too: the node's log has the second alone
	// (the server's would have the first before it).
	stop := make(chan struct{})
	defer close(stop)
	frames, errs := ec.api.Agent().Monitor(stop, &nomadapi.QueryOptions{Params: map[string]string{"node_id": id, "log_level": "trace"}})
	mustOpen(t, frames, errs)
	_, _, err = ec.api.Jobs().List(nil)
	must.NoError(t, err)
	_, err = ec.api.Agent().Host("", id, nil)
	must.NoError(t, err)
	for {
		line := nextFrame(t, frames, errs)
		must.StrNotContains(t, line, "path=/v1/jobs", must.Sprint("the server's log, not the node's"))
		if strings.Contains(line, "path=/v1/agent/host") {
			break
		}
	}
}

// A client-only agent hands a request for a server to its servers.
func TestHTTP_AgentHostForwardedToServerFromClientOnlyAgent(t *testing.T) {
	dev := agenttest.NewDevAgent(t, nil)
	edge := clientOnlyAgent(t, "edge-host", dev, nil)
	c, err := nomadapi.NewClient(&nomadapi.Config{Address: "http://" + edge.HTTPAddr().String()})
	must.NoError(t, err)
	hostOfServer(t, c)

	code, body := rawRequest(t, http.MethodGet, "http://"+edge.HTTPAddr().String()+"/v1/agent/host?server_id=nowhere", "")
	must.Eq(t, http.StatusInternalServerError, code)
	must.StrContains(t, body, "unknown Nomad server nowhere")
}
