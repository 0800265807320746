package agent

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"pgregory.net/rapid"
)

// Whatever the telemetry intervals, a gauge the leader holds back (its
// value did not change) is still emitted within each in-memory interval
// and within Prometheus' expiration: a held-back gauge waits at most the
// refresh plus one collection interval, which must fit in both, or /v1/metrics
// and the scrape would miss series the cluster has.
func TestGaugeRefresh_EverySinkKeepsEverySeries(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		tc := telemetryConfig{
			CollectionInterval:         time.Duration(rapid.IntRange(1, 30_000).Draw(rt, "collection ms")) * time.Millisecond,
			InMemoryCollectionInterval: time.Duration(rapid.IntRange(1, 120_000).Draw(rt, "in-memory ms")) * time.Millisecond,
			PrometheusMetrics:          rapid.Bool().Draw(rt, "prometheus"),
		}
		d := gaugeRefresh(tc)
		if d == 0 {
			return // every gauge at every collection, as without a refresh
		}
		gap := d + tc.CollectionInterval
		must.LessEq(rt, tc.InMemoryCollectionInterval, gap)
		must.LessEq(rt, 2*maxGaugeRefresh, gap)
		if tc.PrometheusMetrics {
			must.LessEq(rt, prometheusExpiration, gap)
		}
	})
	// The defaults: a refresh of 5 s over 1 s collections.
	must.Eq(t, 5*time.Second, gaugeRefresh((&Config{}).telemetry()))
}
