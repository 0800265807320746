package nomad

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/structs"
)

func getAutopilot(t *testing.T, s *Server) *structs.AutopilotConfigResponse {
	t.Helper()
	var resp structs.AutopilotConfigResponse
	must.NoError(t, s.RPC("Operator.AutopilotGetConfiguration", &structs.GenericRequest{}, &resp))
	return &resp
}

// The autopilot configuration is the agent's until one is written; a
// write replaces it through raft, a check-and-set over a stale index is
// not written, and upstream's Enterprise switches are refused by name.
func TestAutopilot_Configuration(t *testing.T) {
	s := testServer(t, func(c *Config) { c.Autopilot.MinQuorum = 3 })
	got := getAutopilot(t, s)
	want := structs.DefaultAutopilotConfig()
	want.MinQuorum = 3
	must.Eq(t, want, got.Config)

	cfg := *got.Config
	cfg.CleanupDeadServers, cfg.LastContactThreshold = false, time.Second
	var set structs.AutopilotSetConfigResponse
	must.NoError(t, s.RPC("Operator.AutopilotSetConfiguration", &structs.AutopilotSetConfigRequest{Config: cfg, CAS: true}, &set))
	must.True(t, set.Updated, must.Sprint("CAS at 0 writes the first configuration"))
	got = getAutopilot(t, s)
	must.False(t, got.Config.CleanupDeadServers)
	must.Eq(t, time.Second, got.Config.LastContactThreshold)
	must.Eq(t, set.Index, got.Config.ModifyIndex)
	must.False(t, s.autopilotConfig().CleanupDeadServers)

	stale := *got.Config
	stale.ModifyIndex = 1
	must.NoError(t, s.RPC("Operator.AutopilotSetConfiguration", &structs.AutopilotSetConfigRequest{Config: stale, CAS: true}, &set))
	must.False(t, set.Updated)

	bad := cfg
	bad.EnableRedundancyZones, bad.EnableCustomUpgrades = true, true
	err := s.RPC("Operator.AutopilotSetConfiguration", &structs.AutopilotSetConfigRequest{Config: bad}, &set)
	must.ErrorIs(t, err, structs.ErrInvalidRequest)
	must.ErrorContains(t, err, "EnableRedundancyZones is an upstream Enterprise feature")
	must.ErrorContains(t, err, "EnableCustomUpgrades is an upstream Enterprise feature")
}

// A lone leader is healthy, the leader and the only voter, with no
// failure tolerance; its stable-since time is kept across reads.
func TestAutopilot_ServerHealth(t *testing.T) {
	s := testServer(t, nil)
	var h structs.OperatorHealthReply
	must.NoError(t, s.RPC("Operator.ServerHealth", &structs.GenericRequest{}, &h))
	must.True(t, h.Healthy)
	must.Eq(t, 0, h.FailureTolerance)
	must.SliceLen(t, 1, h.Servers)
	srv := h.Servers[0]
	must.True(t, srv.Leader)
	must.True(t, srv.Voter)
	must.Eq(t, "alive", srv.SerfStatus)
	must.Eq(t, srv.ID, h.Leader)
	must.Eq(t, []string{srv.ID}, h.Voters)
	must.Positive(t, srv.LastIndex)
	must.False(t, srv.StableSince.IsZero())
	var again structs.OperatorHealthReply
	must.NoError(t, s.RPC("Operator.ServerHealth", &structs.GenericRequest{}, &again))
	must.Eq(t, srv.StableSince, again.Servers[0].StableSince)
}

// The dead-server cleanup removes at most a minority of the old voters,
// never below MinQuorum, and nothing when CleanupDeadServers is off.
func TestAutopilot_DeadToRemove(t *testing.T) {
	dead := []*serverParts{{ID: "a"}, {ID: "b"}, {ID: "c"}}
	ids := func(ps []*serverParts) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.ID)
		}
		return out
	}
	ap := structs.DefaultAutopilotConfig()
	must.Eq(t, []string{"a", "b"}, ids(deadToRemove(dead, 5, ap)))
	must.Eq(t, []string{"a"}, ids(deadToRemove(dead, 3, ap)))
	ap.MinQuorum = 4
	must.Eq(t, []string{"a"}, ids(deadToRemove(dead, 5, ap)))
	ap.MinQuorum = 5
	must.SliceEmpty(t, deadToRemove(dead, 5, ap))
	ap.MinQuorum, ap.CleanupDeadServers = 0, false
	must.SliceEmpty(t, deadToRemove(dead, 5, ap))
}
