package agent_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// nextFrame returns the next log frame of a monitor, failing after 10s.
func nextFrame(t *testing.T, frames <-chan *nomadapi.StreamFrame, errs <-chan error) string {
	t.Helper()
	select {
	case f, ok := <-frames:
		must.True(t, ok, must.Sprint("the monitor ended"))
		return string(f.Data)
	case err := <-errs:
		t.Fatalf("monitor failed: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no log line within 10s")
	}
	return ""
}

// mustOpen fails the test when the monitor could not start.
func mustOpen(t *testing.T, frames <-chan *nomadapi.StreamFrame, errs <-chan error) {
	t.Helper()
	if frames == nil {
		t.Fatalf("monitor did not start: %v", <-errs)
	}
}

// waitForLine reads frames until one contains want.
func waitForLine(t *testing.T, frames <-chan *nomadapi.StreamFrame, errs <-chan error, want string) string {
	t.Helper()
	for {
		if line := nextFrame(t, frames, errs); strings.Contains(line, want) {
			return line
		}
	}
}

// The official client's Agent().Monitor streams the agent's log at the
// level asked, even one below the agent's own log_level (WARN here): an
// operator debugs a running agent without restarting it.
func TestHTTP_AgentMonitor_StreamsLogLines(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	c := officialClient(t, a)
	stop := make(chan struct{})
	defer close(stop)
	frames, errs := c.Agent().Monitor(stop, &nomadapi.QueryOptions{Params: map[string]string{"log_level": "debug"}})
	mustOpen(t, frames, errs)

	_, _, err := c.Jobs().Info("no-such-job", nil)
	must.Error(t, err)
	line := waitForLine(t, frames, errs, "request rejected")
	must.StrContains(t, line, "[DEBUG]")
	must.StrContains(t, line, "/v1/job/no-such-job")

	jsonFrames, jsonErrs := c.Agent().Monitor(stop, &nomadapi.QueryOptions{Params: map[string]string{"log_level": "debug", "log_json": "true"}})
	mustOpen(t, jsonFrames, jsonErrs)
	_, _, err = c.Jobs().Info("another-missing-job", nil)
	must.Error(t, err)
	line = waitForLine(t, jsonFrames, jsonErrs, "another-missing-job")
	var entry map[string]any
	must.NoError(t, json.Unmarshal([]byte(line), &entry))
	must.Eq(t, "request rejected", entry["@message"])
	must.Eq(t, "debug", entry["@level"])
}

// A level the monitor cannot honour is a 400 naming it; a target no
// agent answers to is upstream's 404 (node) or 500 (server).
func TestHTTP_AgentMonitor_BadInput(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	for _, tc := range []struct {
		query string
		code  int
		want  string
	}{
		{"log_level=loud", http.StatusBadRequest, `Unknown log_level "loud"`},
		{"log_json=maybe", http.StatusBadRequest, "log_json"},
		{"node_id=elsewhere", http.StatusNotFound, `Unknown node "elsewhere"`},
		{"server_id=elsewhere", http.StatusInternalServerError, "unknown Nomad server elsewhere"},
		{"node_id=a&server_id=b", http.StatusBadRequest, "Can only forward to either client node or server"},
	} {
		resp, err := http.Get(a.HTTPAddr + "/v1/agent/monitor?" + tc.query)
		must.NoError(t, err)
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		resp.Body.Close()
		must.Eq(t, tc.code, resp.StatusCode, must.Sprint(tc.query))
		must.StrContains(t, b.String(), tc.want)
	}
}

// With ACLs on, monitoring needs agent:read: the log can hold what a
// namespace-only token must not see.
func TestHTTP_AgentMonitor_NeedsAgentRead(t *testing.T) {
	a := agenttest.NewDevAgent(t, func(c *agent.Config) { c.ACL = &agent.ACLConfig{Enabled: true} })
	anon := officialClient(t, a)
	boot, _, err := anon.ACLTokens().Bootstrap(nil)
	must.NoError(t, err)
	mgmt, err := nomadapi.NewClient(&nomadapi.Config{Address: a.HTTPAddr, SecretID: boot.SecretID})
	must.NoError(t, err)
	_, err = mgmt.ACLPolicies().Upsert(&nomadapi.ACLPolicy{Name: "jobs", Rules: `namespace "default" { policy = "read" }`}, nil)
	must.NoError(t, err)
	_, err = mgmt.ACLPolicies().Upsert(&nomadapi.ACLPolicy{Name: "agent", Rules: `agent { policy = "read" }`}, nil)
	must.NoError(t, err)
	jobsTok, _, err := mgmt.ACLTokens().Create(&nomadapi.ACLToken{Name: "jobs", Type: "client", Policies: []string{"jobs"}}, nil)
	must.NoError(t, err)
	agentTok, _, err := mgmt.ACLTokens().Create(&nomadapi.ACLToken{Name: "agent", Type: "client", Policies: []string{"agent"}}, nil)
	must.NoError(t, err)

	stop := make(chan struct{})
	defer close(stop)
	for _, secret := range []string{"", jobsTok.SecretID} {
		frames, errs := anon.Agent().Monitor(stop, &nomadapi.QueryOptions{AuthToken: secret})
		must.Nil(t, frames)
		code, body := statusOf(t, <-errs)
		must.Eq(t, http.StatusForbidden, code)
		must.StrContains(t, body, "agent read")
	}
	frames, errs := anon.Agent().Monitor(stop, &nomadapi.QueryOptions{AuthToken: agentTok.SecretID, Params: map[string]string{"log_level": "debug"}})
	mustOpen(t, frames, errs)

	// The tokens list pages and filters for the management token.
	toks, meta, err := mgmt.ACLTokens().List(&nomadapi.QueryOptions{PerPage: 2})
	must.NoError(t, err)
	must.Len(t, 2, toks)
	must.Eq(t, boot.AccessorID, toks[0].AccessorID)
	rest, _, err := mgmt.ACLTokens().List(&nomadapi.QueryOptions{NextToken: meta.NextToken})
	must.NoError(t, err)
	must.Len(t, 1, rest)
	must.Eq(t, agentTok.AccessorID, rest[0].AccessorID)
	named, _, err := mgmt.ACLTokens().List(&nomadapi.QueryOptions{Filter: `Name == "jobs"`})
	must.NoError(t, err)
	must.Len(t, 1, named)
	pols, _, err := mgmt.ACLPolicies().List(&nomadapi.QueryOptions{Reverse: true, PerPage: 1})
	must.NoError(t, err)
	must.Eq(t, "jobs", pols[0].Name)
}
