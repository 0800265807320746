package agent_test

import (
	"net/http"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// The runtime profiles are served only when the operator asked for them
// (enable_debug, ACLs off): a goroutine dump shows what the agent is
// doing, which is no business of whoever can reach the HTTP port. With it
// set, a profile is what says what bounds a benchmark figure.
func TestHTTP_PprofNeedsEnableDebug(t *testing.T) {
	off := agenttest.NewDevAgent(t, nil)
	code, body := rawRequest(t, http.MethodGet, off.HTTPAddr+"/v1/agent/pprof/goroutine?debug=1", "")
	must.Eq(t, http.StatusForbidden, code)
	must.StrContains(t, body, "enable_debug")

	on := agenttest.NewDevAgent(t, func(c *agent.Config) { c.EnableDebug = true })
	code, body = rawRequest(t, http.MethodGet, on.HTTPAddr+"/v1/agent/pprof/goroutine?debug=1", "")
	must.Eq(t, http.StatusOK, code)
	must.StrContains(t, body, "goroutine profile:")
	code, _ = rawRequest(t, http.MethodGet, on.HTTPAddr+"/v1/agent/pprof/profile?seconds=1", "")
	must.Eq(t, http.StatusOK, code)
}
