package agent_test

import (
	"net/http"
	"testing"

	nomadapi "github.com/hashicorp/nomad/api"
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

// Upstream's parameters through the official client: its PprofOptions
// send seconds to every profile (nomad operator debug asks the goroutine
// and heap profiles with the capture's seconds and debug set), which Go's
// own handler refused for a snapshot ("seconds and debug params are
// incompatible"); the snapshot answers at once, as upstream's. A CPU
// profile and a trace run for the seconds asked; a bad value is a 400
// naming it; an unknown profile a 404.
func TestHTTP_PprofUpstreamParameters(t *testing.T) {
	a := agenttest.NewDevAgent(t, func(c *agent.Config) { c.EnableDebug = true })
	c := officialClient(t, a)

	out, err := c.Agent().Lookup("goroutine", nomadapi.PprofOptions{Seconds: 30, Debug: 1}, nil)
	must.NoError(t, err)
	must.StrContains(t, string(out), "goroutine profile:")
	out, err = c.Agent().Lookup("heap", nomadapi.PprofOptions{Seconds: 30, GC: 1}, nil)
	must.NoError(t, err)
	must.SliceNotEmpty(t, out)
	out, err = c.Agent().Lookup("threadcreate", nomadapi.PprofOptions{Seconds: 30}, nil)
	must.NoError(t, err)
	must.SliceNotEmpty(t, out)
	out, err = c.Agent().CPUProfile(nomadapi.PprofOptions{Seconds: 1}, nil)
	must.NoError(t, err)
	must.SliceNotEmpty(t, out)
	out, err = c.Agent().Trace(nomadapi.PprofOptions{Seconds: 1}, nil)
	must.NoError(t, err)
	must.SliceNotEmpty(t, out)

	code, body := rawRequest(t, http.MethodGet, a.HTTPAddr+"/v1/agent/pprof/profile?seconds=soon", "")
	must.Eq(t, http.StatusBadRequest, code)
	must.StrContains(t, body, `Invalid seconds "soon"`)
	code, _ = rawRequest(t, http.MethodGet, a.HTTPAddr+"/v1/agent/pprof/nosuch", "")
	must.Eq(t, http.StatusNotFound, code)
}
