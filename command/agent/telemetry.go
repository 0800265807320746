package agent

import (
	"fmt"
	"net/http"
	"sync"
	"time"

	armon "github.com/armon/go-metrics"
	metrics "github.com/hashicorp/go-metrics"
	"github.com/hashicorp/go-metrics/datadog"
	metricsprom "github.com/hashicorp/go-metrics/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// prometheusExpiration is how long the Prometheus sink keeps a series no
// one has set: a gauge of a node that reconnected, or of a job that was
// purged, leaves the scrape after it rather than staying forever.
const prometheusExpiration = time.Minute

// agentTelemetry is the agent's metrics: the in-memory sink behind
// /v1/metrics, and the Prometheus registry behind ?format=prometheus
// when prometheus_metrics is on. The server, the client, raft and serf
// emit through go-metrics' process-wide instance, which the agent
// installs, as upstream does: an agent is a process.
type agentTelemetry struct {
	inmem  *metrics.InmemSink
	signal *metrics.InmemSignal
	// prometheus serves the text exposition; nil when prometheus_metrics
	// is off.
	prometheus http.Handler
	metrics    *metrics.Metrics
	// armon is raft-boltdb's go-metrics instance (telemetry_armon.go).
	armon *armon.Metrics

	// shutdowns stop the network sinks (statsd, statsite, DogStatsD).
	shutdowns []func()

	stopCh chan struct{}
	wg     sync.WaitGroup
}

// setupTelemetry installs the agent's sinks as go-metrics' global and
// starts sampling the Go runtime every collection_interval. stop undoes
// both.
func setupTelemetry(cfg *Config) (*agentTelemetry, error) {
	tc := cfg.telemetry()
	t := &agentTelemetry{
		inmem:  metrics.NewInmemSink(tc.InMemoryCollectionInterval, tc.InMemoryRetentionPeriod),
		stopCh: make(chan struct{}),
	}
	sinks := metrics.FanoutSink{t.inmem}
	if tc.PrometheusMetrics {
		// A registry of the agent's own, not Prometheus' default one:
		// several agents in one test process would collide there.
		reg := prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		sink, err := metricsprom.NewPrometheusSinkFrom(metricsprom.PrometheusOpts{
			Expiration: prometheusExpiration, Registerer: reg,
		})
		if err != nil {
			return nil, fmt.Errorf("telemetry: starting the Prometheus sink: %w", err)
		}
		sinks = append(sinks, sink)
		t.prometheus = promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	}

	// statsd (UDP) and statsite (TCP) get every metric too; their
	// flushers dial on their own goroutine and keep dialling, so an
	// address that does not answer yet costs nothing but the datagrams.
	if tc.StatsdAddress != "" {
		s, err := metrics.NewStatsdSink(tc.StatsdAddress)
		if err != nil {
			return nil, fmt.Errorf("telemetry: statsd_address: %w", err)
		}
		sinks = append(sinks, s)
		t.shutdowns = append(t.shutdowns, s.Shutdown)
	}
	if tc.StatsiteAddress != "" {
		s, err := metrics.NewStatsiteSink(tc.StatsiteAddress)
		if err != nil {
			t.stopSinks()
			return nil, fmt.Errorf("telemetry: statsite_address: %w", err)
		}
		sinks = append(sinks, s)
		t.shutdowns = append(t.shutdowns, s.Shutdown)
	}

	mc := metrics.DefaultConfig("nomad")
	// The hostname is a label, not a part of gauge names, so that one
	// dashboard serves every agent; disable_hostname drops it.
	mc.EnableHostname = !tc.DisableHostname
	mc.EnableHostnameLabel = !tc.DisableHostname
	if tc.UseNodeName {
		mc.HostName = cfg.nodeName()
		mc.EnableHostname, mc.EnableHostnameLabel = true, true
	}
	// go-metrics' own runtime sampler is a goroutine that never ends;
	// the agent samples instead, and stops at shutdown.
	mc.EnableRuntimeMetrics = false
	mc.AllowedPrefixes, mc.BlockedPrefixes = tc.AllowedPrefixes, tc.BlockedPrefixes
	mc.FilterDefault = tc.FilterDefault
	// DogStatsD gets go-metrics' labels as tags (its sink's own mapping),
	// the agent's host name as upstream passes it, and datadog_tags on
	// every datagram.
	if tc.DatadogAddress != "" {
		s, err := datadog.NewDogStatsdSink(tc.DatadogAddress, mc.HostName)
		if err != nil {
			t.stopSinks()
			return nil, fmt.Errorf("telemetry: datadog_address: %w", err)
		}
		s.SetTags(tc.DatadogTags)
		sinks = append(sinks, s)
		t.shutdowns = append(t.shutdowns, s.Shutdown)
	}
	m, err := metrics.NewGlobal(mc, sinks)
	if err != nil {
		t.stopSinks()
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	t.metrics = m
	t.armon = installArmon(mc, sinks)
	t.signal = metrics.DefaultInmemSignal(t.inmem)

	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		tick := time.NewTicker(tc.CollectionInterval)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				m.EmitRuntimeStats()
			case <-t.stopCh:
				return
			}
		}
	}()
	return t, nil
}

// stopSinks stops the network sinks' flushers: at stop, and when a later
// sink of the setup fails.
func (t *agentTelemetry) stopSinks() {
	for _, shutdown := range t.shutdowns {
		shutdown()
	}
	t.shutdowns = nil
}

// stop ends the runtime sampler and, unless another agent of the process
// installed its own since, puts go-metrics' global back to a black hole.
func (t *agentTelemetry) stop() {
	if t == nil {
		return
	}
	close(t.stopCh)
	t.wg.Wait()
	t.signal.Stop()
	t.stopSinks()
	uninstallArmon(t.armon)
	if metrics.Default() == t.metrics {
		_, _ = metrics.NewGlobal(&metrics.Config{}, &metrics.BlackholeSink{})
	}
}
