package agent

import (
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// Upstream's defaults for the telemetry block.
const (
	DefaultCollectionInterval         = time.Second
	DefaultInMemoryCollectionInterval = 10 * time.Second
	DefaultInMemoryRetentionPeriod    = time.Minute
)

// Telemetry is the `telemetry` block: how often the agent samples its
// gauges, whether /v1/metrics also speaks Prometheus, and which optional
// families the client publishes. Fields are pointers so that a later file
// setting false or a default value wins when merged; telemetry() reads
// the values in effect.
type Telemetry struct {
	CollectionInterval         *time.Duration
	InMemoryCollectionInterval *time.Duration
	InMemoryRetentionPeriod    *time.Duration
	PrometheusMetrics          *bool
	PublishAllocationMetrics   *bool
	PublishNodeMetrics         *bool
	DisableHostname            *bool
	UseNodeName                *bool
	// PrefixFilter holds "+prefix" (allow) and "-prefix" (block) rules,
	// as upstream; FilterDefault says what a metric no rule names gets.
	PrefixFilter  []string
	FilterDefault *bool
	// StatsdAddress and StatsiteAddress are host:port of a statsd (UDP)
	// and a statsite (TCP) the agent also sends every metric to.
	StatsdAddress   *string
	StatsiteAddress *string
	// DatadogAddress is host:port of a DogStatsD agent (UDP) that gets
	// every metric with its labels as tags, and DatadogTags ("key:value")
	// added to each.
	DatadogAddress *string
	DatadogTags    []string
}

// unsupportedTelemetry are upstream's telemetry keys for sinks and options
// this version has no code for: refused by name so that an operator does
// not believe metrics reach a statsd that is never dialled.
var unsupportedTelemetry = func() map[string]string {
	const sink = "only the in-memory sink (/v1/metrics), Prometheus (prometheus_metrics), statsd (statsd_address), statsite (statsite_address) and DogStatsD (datadog_address) exist"
	m := map[string]string{
		"include_alloc_metadata_in_metrics":      "",
		"allowed_metadata_keys_in_metrics":       "",
		"disable_dispatched_job_summary_metrics": "there are no dispatched jobs",
		"disable_quota_utilization_metrics":      "there are no quotas",
		"disable_rpc_rate_metrics_labels":        "",
		"disable_allocation_hook_metrics":        "",
	}
	for _, k := range []string{
		"api_token", "api_app", "api_url", "submission_interval", "submission_url",
		"check_id", "check_force_metric_activation", "check_instance_id",
		"check_search_tag", "check_tags", "check_display_name", "broker_id", "broker_select_tag",
	} {
		m["circonus_"+k] = sink
	}
	return m
}()

// telemetry decodes the telemetry block. Intervals must be positive, and
// the in-memory interval no longer than its retention, or /v1/metrics
// would have nothing to show.
func (d *configDecoder) telemetry(body hcl.Body) *Telemetry {
	b := d.open(body, "telemetry.", bodySpec{
		attrs: []string{
			"collection_interval", "in_memory_collection_interval", "in_memory_retention_period",
			"prometheus_metrics", "publish_allocation_metrics", "publish_node_metrics",
			"disable_hostname", "use_node_name", "prefix_filter", "filter_default",
			"statsd_address", "statsite_address", "datadog_address", "datadog_tags",
		},
		unsupported: unsupportedTelemetry,
	})
	t := &Telemetry{}
	b.positiveDuration("collection_interval", &t.CollectionInterval)
	b.positiveDuration("in_memory_collection_interval", &t.InMemoryCollectionInterval)
	b.positiveDuration("in_memory_retention_period", &t.InMemoryRetentionPeriod)
	b.optBool("prometheus_metrics", &t.PrometheusMetrics)
	b.optBool("publish_allocation_metrics", &t.PublishAllocationMetrics)
	b.optBool("publish_node_metrics", &t.PublishNodeMetrics)
	b.optBool("disable_hostname", &t.DisableHostname)
	b.optBool("use_node_name", &t.UseNodeName)
	b.optBool("filter_default", &t.FilterDefault)
	for _, a := range []struct {
		name string
		dst  **string
	}{{"statsd_address", &t.StatsdAddress}, {"statsite_address", &t.StatsiteAddress}, {"datadog_address", &t.DatadogAddress}} {
		var v string
		if b.str(a.name, &v) {
			if _, _, err := net.SplitHostPort(v); err != nil {
				d.errorf(b.attr(a.name).Expr.Range(), "telemetry.%s %q must be host:port: %v", a.name, v, err)
			}
			*a.dst = &v
		}
	}
	if b.strList("datadog_tags", &t.DatadogTags) {
		for _, tag := range t.DatadogTags {
			if tag == "" || strings.ContainsAny(tag, ",|#\n") {
				d.errorf(b.attr("datadog_tags").Expr.Range(), "telemetry.datadog_tags: %q is not a DogStatsD tag (key:value, without , | # or a newline)", tag)
			}
		}
	}
	if b.strList("prefix_filter", &t.PrefixFilter) {
		if _, _, err := splitPrefixFilter(t.PrefixFilter); err != nil {
			d.errorf(b.attr("prefix_filter").Expr.Range(), "telemetry.prefix_filter: %v", err)
		}
	}
	if t.InMemoryCollectionInterval != nil && t.InMemoryRetentionPeriod != nil &&
		*t.InMemoryCollectionInterval > *t.InMemoryRetentionPeriod {
		d.errorf(b.attr("in_memory_collection_interval").Expr.Range(),
			"telemetry.in_memory_collection_interval (%v) must not be longer than in_memory_retention_period (%v)",
			*t.InMemoryCollectionInterval, *t.InMemoryRetentionPeriod)
	}
	return t
}

// positiveDuration reads a duration greater than zero, only when present.
func (b *block) positiveDuration(name string, dst **time.Duration) {
	a := b.attr(name)
	if a == nil {
		return
	}
	var v time.Duration = -1
	b.duration(name, &v)
	switch {
	case v == 0:
		b.d.errorf(a.Expr.Range(), "%s must be greater than zero", b.key(a))
	case v > 0:
		*dst = &v
	}
}

// optBool reads true or false, only when present.
func (b *block) optBool(name string, dst **bool) {
	if v, _, ok := b.get(name, cty.Bool, "true or false"); ok {
		*dst = ptr(v.True())
	}
}

// splitPrefixFilter splits prefix_filter rules into allowed and blocked
// prefixes.
func splitPrefixFilter(rules []string) (allow, block []string, err error) {
	for _, r := range rules {
		switch {
		case strings.HasPrefix(r, "+") && len(r) > 1:
			allow = append(allow, r[1:])
		case strings.HasPrefix(r, "-") && len(r) > 1:
			block = append(block, r[1:])
		default:
			return nil, nil, fmt.Errorf("rule %q must be a metric prefix after + (allow) or - (block)", r)
		}
	}
	return allow, block, nil
}

// telemetryConfig is the telemetry in effect: the block's values over
// upstream's defaults.
type telemetryConfig struct {
	CollectionInterval         time.Duration
	InMemoryCollectionInterval time.Duration
	InMemoryRetentionPeriod    time.Duration
	PrometheusMetrics          bool
	PublishAllocationMetrics   bool
	PublishNodeMetrics         bool
	DisableHostname            bool
	UseNodeName                bool
	AllowedPrefixes            []string
	BlockedPrefixes            []string
	FilterDefault              bool
	StatsdAddress              string
	StatsiteAddress            string
	DatadogAddress             string
	DatadogTags                []string
}

func (c *Config) telemetry() telemetryConfig {
	t := c.Telemetry
	if t == nil {
		t = &Telemetry{}
	}
	allow, block, _ := splitPrefixFilter(t.PrefixFilter)
	return telemetryConfig{
		CollectionInterval:         orDefault(t.CollectionInterval, DefaultCollectionInterval),
		InMemoryCollectionInterval: orDefault(t.InMemoryCollectionInterval, DefaultInMemoryCollectionInterval),
		InMemoryRetentionPeriod:    orDefault(t.InMemoryRetentionPeriod, DefaultInMemoryRetentionPeriod),
		PrometheusMetrics:          orDefault(t.PrometheusMetrics, false),
		PublishAllocationMetrics:   orDefault(t.PublishAllocationMetrics, false),
		PublishNodeMetrics:         orDefault(t.PublishNodeMetrics, false),
		DisableHostname:            orDefault(t.DisableHostname, false),
		UseNodeName:                orDefault(t.UseNodeName, false),
		AllowedPrefixes:            allow,
		BlockedPrefixes:            block,
		FilterDefault:              orDefault(t.FilterDefault, true),
		StatsdAddress:              orDefault(t.StatsdAddress, ""),
		StatsiteAddress:            orDefault(t.StatsiteAddress, ""),
		DatadogAddress:             orDefault(t.DatadogAddress, ""),
		DatadogTags:                t.DatadogTags,
	}
}

func orDefault[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// copy returns a Telemetry sharing nothing with t; never nil.
func (t *Telemetry) copy() *Telemetry {
	out := &Telemetry{}
	out.merge(t)
	return out
}

// merge layers the fields b sets over o.
func (o *Telemetry) merge(b *Telemetry) {
	if b == nil {
		return
	}
	mergePtr(&o.CollectionInterval, b.CollectionInterval)
	mergePtr(&o.InMemoryCollectionInterval, b.InMemoryCollectionInterval)
	mergePtr(&o.InMemoryRetentionPeriod, b.InMemoryRetentionPeriod)
	mergePtr(&o.PrometheusMetrics, b.PrometheusMetrics)
	mergePtr(&o.PublishAllocationMetrics, b.PublishAllocationMetrics)
	mergePtr(&o.PublishNodeMetrics, b.PublishNodeMetrics)
	mergePtr(&o.DisableHostname, b.DisableHostname)
	mergePtr(&o.UseNodeName, b.UseNodeName)
	mergePtr(&o.FilterDefault, b.FilterDefault)
	mergePtr(&o.StatsdAddress, b.StatsdAddress)
	mergePtr(&o.StatsiteAddress, b.StatsiteAddress)
	mergePtr(&o.DatadogAddress, b.DatadogAddress)
	if b.DatadogTags != nil {
		o.DatadogTags = append([]string(nil), b.DatadogTags...)
	}
	if b.PrefixFilter != nil {
		o.PrefixFilter = append([]string(nil), b.PrefixFilter...)
	}
}

// validate catches what merging can still get wrong: each file's intervals
// were checked alone.
func (tc telemetryConfig) validate() []error {
	if tc.InMemoryCollectionInterval > tc.InMemoryRetentionPeriod {
		return []error{fmt.Errorf("telemetry.in_memory_collection_interval (%v) must not be longer than in_memory_retention_period (%v)",
			tc.InMemoryCollectionInterval, tc.InMemoryRetentionPeriod)}
	}
	return nil
}
