package agent_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// The official client reads and writes the autopilot configuration
// (durations as strings on the wire), a check-and-set over a stale index
// answers false, and the health of a lone dev server decodes as upstream's:
// healthy, its leader and only voter.
func TestHTTP_OfficialClientAutopilot(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	c := officialClient(t, a)
	cfg, _, err := c.Operator().AutopilotGetConfiguration(nil)
	must.NoError(t, err)
	must.True(t, cfg.CleanupDeadServers)
	must.Eq(t, 200*time.Millisecond, cfg.LastContactThreshold)
	must.Eq(t, 10*time.Second, cfg.ServerStabilizationTime)
	must.Eq(t, 250, cfg.MaxTrailingLogs)

	cfg.MaxTrailingLogs, cfg.LastContactThreshold = 300, time.Second
	ok, _, err := c.Operator().AutopilotCASConfiguration(cfg, nil)
	must.NoError(t, err)
	must.True(t, ok)
	again, _, err := c.Operator().AutopilotGetConfiguration(nil)
	must.NoError(t, err)
	must.Eq(t, 300, again.MaxTrailingLogs)
	must.Eq(t, time.Second, again.LastContactThreshold)
	ok, _, err = c.Operator().AutopilotCASConfiguration(cfg, nil)
	must.NoError(t, err)
	must.False(t, ok, must.Sprint("cfg carries the index before the write"))

	health, _, err := c.Operator().AutopilotServerHealth(nil)
	must.NoError(t, err)
	must.True(t, health.Healthy)
	must.SliceLen(t, 1, health.Servers)
	must.True(t, health.Servers[0].Leader)
	must.Eq(t, health.Servers[0].ID, health.Leader)

	code, body := rawRequest(t, http.MethodPut, a.HTTPAddr+"/v1/operator/autopilot/configuration", `{"LastContactThreshold":"bogus"}`)
	must.Eq(t, http.StatusBadRequest, code)
	must.StrContains(t, body, `LastContactThreshold: time: invalid duration "bogus"`)
	code, body = rawRequest(t, http.MethodPut, a.HTTPAddr+"/v1/operator/autopilot/configuration", `{"DisableUpgradeMigration":true}`)
	must.Eq(t, http.StatusBadRequest, code)
	must.StrContains(t, body, "DisableUpgradeMigration is an upstream Enterprise feature")
}
