package agent

import "time"

// maxGaugeRefresh bounds gaugeRefresh for the network sinks: statsd,
// statsite and DogStatsD aggregate over flush intervals (10 s by
// default), and a gauge given at least twice per flush is in each.
const maxGaugeRefresh = 5 * time.Second

// gaugeRefresh is how long the leader may go without emitting again a
// gauge whose value did not change (nomad.Config.GaugeRefreshInterval):
// half the shortest time a sink keeps a gauge it is not given again, so
// that every sink holds every series at every moment. The in-memory sink
// behind /v1/metrics shows its last finished interval
// (in_memory_collection_interval), which holds only the gauges set during
// it; Prometheus drops a series after prometheusExpiration. 0, emitting
// every gauge at every collection, when that is no longer than the
// collection interval anyway.
func gaugeRefresh(tc telemetryConfig) time.Duration {
	d := min(tc.InMemoryCollectionInterval/2, maxGaugeRefresh)
	if tc.PrometheusMetrics {
		d = min(d, prometheusExpiration/2)
	}
	if d <= tc.CollectionInterval {
		return 0
	}
	return d
}
