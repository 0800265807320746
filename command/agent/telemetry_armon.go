package agent

import (
	armon "github.com/armon/go-metrics"
	metrics "github.com/hashicorp/go-metrics"
)

// raft-boltdb, the servers' raft log on disk, still emits through
// armon/go-metrics, go-metrics' former module path, whose global instance
// is separate. installArmon points it at the agent's sinks, so that its
// nomad.raft.boltdb.* metrics are served with the rest. Goes away once
// raft-boltdb moves to hashicorp/go-metrics.
func installArmon(mc *metrics.Config, sink metrics.MetricSink) *armon.Metrics {
	m, _ := armon.NewGlobal(&armon.Config{
		ServiceName:         mc.ServiceName,
		HostName:            mc.HostName,
		EnableHostname:      mc.EnableHostname,
		EnableHostnameLabel: mc.EnableHostnameLabel,
		TimerGranularity:    mc.TimerGranularity,
		AllowedPrefixes:     mc.AllowedPrefixes,
		BlockedPrefixes:     mc.BlockedPrefixes,
		FilterDefault:       mc.FilterDefault,
	}, armonSink{sink})
	return m
}

// uninstallArmon puts armon's global back to a black hole, unless another
// agent of the process installed its own since.
func uninstallArmon(m *armon.Metrics) {
	if m != nil && armon.Default() == m {
		_, _ = armon.NewGlobal(&armon.Config{}, &armon.BlackholeSink{})
	}
}

// armonSink hands armon's calls to a go-metrics sink.
type armonSink struct{ sink metrics.MetricSink }

var _ armon.MetricSink = armonSink{}

func (s armonSink) SetGauge(key []string, val float32) { s.sink.SetGauge(key, val) }
func (s armonSink) SetGaugeWithLabels(key []string, val float32, labels []armon.Label) {
	s.sink.SetGaugeWithLabels(key, val, convertLabels(labels))
}
func (s armonSink) EmitKey(key []string, val float32)     { s.sink.EmitKey(key, val) }
func (s armonSink) IncrCounter(key []string, val float32) { s.sink.IncrCounter(key, val) }
func (s armonSink) IncrCounterWithLabels(key []string, val float32, labels []armon.Label) {
	s.sink.IncrCounterWithLabels(key, val, convertLabels(labels))
}
func (s armonSink) AddSample(key []string, val float32) { s.sink.AddSample(key, val) }
func (s armonSink) AddSampleWithLabels(key []string, val float32, labels []armon.Label) {
	s.sink.AddSampleWithLabels(key, val, convertLabels(labels))
}

func convertLabels(in []armon.Label) []metrics.Label {
	if len(in) == 0 {
		return nil
	}
	out := make([]metrics.Label, len(in))
	for i, l := range in {
		out[i] = metrics.Label{Name: l.Name, Value: l.Value}
	}
	return out
}
