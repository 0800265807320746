package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// Every telemetry key we implement parses, in HCL and JSON alike, so an
// upstream operator's telemetry block keeps its meaning here.
func TestParseConfig_Telemetry(t *testing.T) {
	for name, src := range map[string]string{
		"agent.hcl": `
telemetry {
  collection_interval           = "5s"
  in_memory_collection_interval = "2s"
  in_memory_retention_period    = "30s"
  prometheus_metrics            = true
  publish_allocation_metrics    = true
  publish_node_metrics          = true
  disable_hostname              = true
  use_node_name                 = false
  prefix_filter                 = ["+nomad.nomad", "-nomad.runtime"]
  filter_default                = false
}
`,
		"agent.json": `{"telemetry": {
  "collection_interval": "5s", "in_memory_collection_interval": "2s", "in_memory_retention_period": "30s",
  "prometheus_metrics": true, "publish_allocation_metrics": true, "publish_node_metrics": true,
  "disable_hostname": true, "use_node_name": false,
  "prefix_filter": ["+nomad.nomad", "-nomad.runtime"], "filter_default": false
}}`,
	} {
		t.Run(name, func(t *testing.T) {
			c, err := ParseConfig(name, []byte(src))
			must.NoError(t, err)
			got := DefaultConfig().Merge(c).telemetry()
			must.Eq(t, telemetryConfig{
				CollectionInterval:         5 * time.Second,
				InMemoryCollectionInterval: 2 * time.Second,
				InMemoryRetentionPeriod:    30 * time.Second,
				PrometheusMetrics:          true,
				PublishAllocationMetrics:   true,
				PublishNodeMetrics:         true,
				DisableHostname:            true,
				UseNodeName:                false,
				AllowedPrefixes:            []string{"nomad.nomad"},
				BlockedPrefixes:            []string{"nomad.runtime"},
				FilterDefault:              false,
			}, got)
		})
	}
}

// Without a telemetry block the agent runs with upstream's defaults.
func TestTelemetry_Defaults(t *testing.T) {
	got := DefaultConfig().telemetry()
	must.Eq(t, time.Second, got.CollectionInterval)
	must.Eq(t, 10*time.Second, got.InMemoryCollectionInterval)
	must.Eq(t, time.Minute, got.InMemoryRetentionPeriod)
	must.False(t, got.PrometheusMetrics)
	must.False(t, got.PublishNodeMetrics)
	must.True(t, got.FilterDefault)
}

// A dev agent publishes every metric, Prometheus included, as upstream's;
// a config file may still turn any of it off.
func TestTelemetry_DevDefaults(t *testing.T) {
	got := DevConfig().telemetry()
	must.True(t, got.PrometheusMetrics)
	must.True(t, got.PublishNodeMetrics)
	must.True(t, got.PublishAllocationMetrics)
	off, err := ParseConfig("a.hcl", []byte("telemetry {\n  publish_allocation_metrics = false\n}\n"))
	must.NoError(t, err)
	must.False(t, DevConfig().Merge(off).telemetry().PublishAllocationMetrics)
}

// A later config file turning a setting off wins over an earlier one that
// turned it on, as with every other key.
func TestTelemetry_MergeFalseWins(t *testing.T) {
	first, err := ParseConfig("a.hcl", []byte("telemetry {\n  prometheus_metrics = true\n  publish_node_metrics = true\n}\n"))
	must.NoError(t, err)
	second, err := ParseConfig("b.hcl", []byte("telemetry {\n  prometheus_metrics = false\n}\n"))
	must.NoError(t, err)
	got := DefaultConfig().Merge(first).Merge(second).telemetry()
	must.False(t, got.PrometheusMetrics)
	must.True(t, got.PublishNodeMetrics)
}

// Sinks we have no code for are refused by name at their position, never
// accepted as if metrics reached a statsd that is never dialled.
func TestParseConfig_TelemetryRefusedByName(t *testing.T) {
	src := `
telemetry {
  prometheus_metrics = true
  statsite_address   = "127.0.0.1:8125"
  circonus_api_url   = "x"
  circonus_api_token = "x"
  disable_dispatched_job_summary_metrics = true
}
`
	_, err := ParseConfig("agent.hcl", []byte(src))
	must.Error(t, err)
	msg := err.Error()
	for _, want := range []string{
		"agent.hcl:5:3: telemetry.circonus_api_url is not supported by this version; only the in-memory sink",
		"agent.hcl:6:3: telemetry.circonus_api_token is not supported by this version",
		"agent.hcl:7:3: telemetry.disable_dispatched_job_summary_metrics is not supported by this version; there are no dispatched jobs",
	} {
		must.StrContains(t, msg, want)
	}
	must.StrNotContains(t, msg, "Unsupported argument")

	_, err = ParseConfig("agent.json", []byte(`{"telemetry": {"circonus_api_app": "x"}}`))
	must.ErrorContains(t, err, "agent.json:1:16: telemetry.circonus_api_app is not supported by this version")

	_, err = ParseConfig("agent.hcl", []byte("telemetry {\n  collection_intervall = \"1s\"\n}\n"))
	must.ErrorContains(t, err, `agent.hcl:2:3: Unsupported argument; An argument named "collection_intervall" is not expected here. Did you mean "collection_interval"?`)
}

// Values that would leave the metrics endpoint empty or the filter
// meaningless are refused at the value.
func TestParseConfig_TelemetryBadValues(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{`collection_interval = "0s"`, "agent.hcl:2:25: telemetry.collection_interval must be greater than zero"},
		{`collection_interval = "soon"`, `telemetry.collection_interval: invalid duration "soon"`},
		{`prometheus_metrics = "yes"`, "telemetry.prometheus_metrics must be true or false, not string"},
		{`statsd_address = "localhost"`, `agent.hcl:2:20: telemetry.statsd_address "localhost" must be host:port`},
		{`datadog_address = "dd"`, `agent.hcl:2:21: telemetry.datadog_address "dd" must be host:port`},
		{`datadog_tags = ["env:prod", "a,b"]`, `agent.hcl:2:18: telemetry.datadog_tags: "a,b" is not a DogStatsD tag`},
		{`prefix_filter = ["nomad.raft"]`, `telemetry.prefix_filter: rule "nomad.raft" must be a metric prefix after + (allow) or - (block)`},
		{"in_memory_collection_interval = \"2m\"\n  in_memory_retention_period = \"1m\"",
			"telemetry.in_memory_collection_interval (2m0s) must not be longer than in_memory_retention_period (1m0s)"},
	} {
		_, err := ParseConfig("agent.hcl", []byte("telemetry {\n  "+tc.src+"\n}\n"))
		must.ErrorContains(t, err, tc.want, must.Sprint(tc.src))
	}

	// Merging can make what each file allowed alone contradict.
	c := DefaultConfig()
	c.Server.Enabled = true
	c.DevMode = true
	c.Telemetry = &Telemetry{InMemoryCollectionInterval: ptr(2 * time.Minute)}
	err := c.Validate()
	must.Error(t, err)
	must.True(t, strings.Contains(err.Error(), "in_memory_collection_interval (2m0s) must not be longer"))
}
