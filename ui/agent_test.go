package ui_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// A real agent serves the UI beside its API: / redirects to /ui/, a page
// comes with its CSP, and serving a UI changes nothing for a write sent
// by another site's page, which is still refused.
func TestUI_ServedByAgent(t *testing.T) {
	a := agenttest.NewDevAgent(t, func(c *agent.Config) { c.Client.Enabled = false })
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	resp, err := noFollow.Get(a.HTTPAddr + "/")
	must.NoError(t, err)
	resp.Body.Close()
	must.Eq(t, http.StatusTemporaryRedirect, resp.StatusCode)
	must.Eq(t, "/ui/", resp.Header.Get("Location"))

	resp, err = http.Get(a.HTTPAddr + "/ui/jobs/example")
	must.NoError(t, err)
	resp.Body.Close()
	must.Eq(t, http.StatusOK, resp.StatusCode)
	must.StrContains(t, resp.Header.Get("Content-Security-Policy"), "script-src 'self'")

	resp, err = http.Get(a.HTTPAddr + "/v1/jobs")
	must.NoError(t, err)
	resp.Body.Close()
	must.Eq(t, http.StatusOK, resp.StatusCode)

	req, err := http.NewRequest(http.MethodPost, a.HTTPAddr+"/v1/jobs", strings.NewReader(`{}`))
	must.NoError(t, err)
	req.Header.Set("Origin", "http://evil.example")
	req.Header.Set("Content-Type", "text/plain")
	resp, err = http.DefaultClient.Do(req)
	must.NoError(t, err)
	resp.Body.Close()
	must.Eq(t, http.StatusForbidden, resp.StatusCode)
}
