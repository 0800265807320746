package agent

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// server.search, upstream's block, sets the fuzzy search endpoint's
// switch and bounds; what is left out keeps upstream's defaults, a later
// file overrides an earlier one key by key, and a bad value is refused
// with its position.
func TestParseConfig_Search(t *testing.T) {
	c, err := ParseConfig("agent.hcl", []byte("server {\n  search {\n    fuzzy_enabled = false\n    limit_query = 200\n  }\n}\n"))
	must.NoError(t, err)
	merged := DefaultConfig().Merge(c)
	got := structs.DefaultSearchConfig()
	merged.Server.Search.apply(&got)
	must.Eq(t, structs.SearchConfig{FuzzyEnabled: false, LimitQuery: 200, LimitResults: 100, MinTermLength: 2}, got)

	later, err := ParseConfig("b.hcl", []byte("server {\n  search {\n    min_term_length = 5\n  }\n}\n"))
	must.NoError(t, err)
	got = structs.DefaultSearchConfig()
	merged.Merge(later).Server.Search.apply(&got)
	must.Eq(t, structs.SearchConfig{FuzzyEnabled: false, LimitQuery: 200, LimitResults: 100, MinTermLength: 5}, got)
	must.Eq(t, 0, merged.Server.Search.MinTermLength, must.Sprint("a merge leaves its inputs alone"))

	got = structs.DefaultSearchConfig()
	DefaultConfig().Server.Search.apply(&got)
	must.Eq(t, structs.DefaultSearchConfig(), got)

	_, err = ParseConfig("agent.hcl", []byte("server {\n  search {\n    limit_results = 0\n  }\n}\n"))
	must.ErrorContains(t, err, "agent.hcl:3:")
	must.ErrorContains(t, err, "server.search.limit_results must be a whole number between 1 and 1000000")
	_, err = ParseConfig("agent.hcl", []byte("server {\n  search {\n    fuzzy = true\n  }\n}\n"))
	must.ErrorContains(t, err, "fuzzy")
}

// The log keys load with upstream's names and merge key by key; a
// negative rotation size is refused with its position.
func TestParseConfig_Logging(t *testing.T) {
	c, err := ParseConfig("agent.hcl", []byte(`log_json = true
log_include_location = true
log_file = "/var/log/nomad/"
log_rotate_bytes = 1048576
log_rotate_duration = "1h"
log_rotate_max_files = 5
`))
	must.NoError(t, err)
	m := DefaultConfig().Merge(c)
	must.True(t, m.LogJSON)
	must.True(t, m.LogIncludeLocation)
	must.Eq(t, "/var/log/nomad/", m.LogFile)
	must.Eq(t, 1048576, m.LogRotateBytes)
	must.Eq(t, time.Hour, m.LogRotateDuration)
	must.Eq(t, 5, m.LogRotateMaxFiles)

	_, err = ParseConfig("agent.hcl", []byte("log_rotate_bytes = -1\n"))
	must.ErrorContains(t, err, "agent.hcl:1:")
	must.ErrorContains(t, err, "log_rotate_bytes must be a whole number between 0 and")
}

// The autopilot block sets the servers' autopilot configuration until one
// is written through the API; upstream's Enterprise keys are refused by
// name with their position.
func TestParseConfig_Autopilot(t *testing.T) {
	c, err := ParseConfig("agent.hcl", []byte("autopilot {\n  cleanup_dead_servers = false\n  min_quorum = 3\n  last_contact_threshold = \"1s\"\n}\n"))
	must.NoError(t, err)
	got := structs.DefaultAutopilotConfig()
	DefaultConfig().Merge(c).Autopilot.apply(got)
	want := structs.DefaultAutopilotConfig()
	want.CleanupDeadServers, want.MinQuorum, want.LastContactThreshold = false, 3, time.Second
	must.Eq(t, want, got)

	_, err = ParseConfig("agent.hcl", []byte("autopilot {\n  enable_redundancy_zones = true\n}\n"))
	must.ErrorContains(t, err, "agent.hcl:2:3: autopilot.enable_redundancy_zones is not supported by this version; an upstream Enterprise feature")
}
