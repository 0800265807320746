package agent

import (
	"net/http"

	"github.com/nomad-edge/nomad/acl"
)

// metricsHandler serves GET /v1/metrics: the in-memory sink's last full
// interval as JSON (go-metrics' summary, upstream's shape), or with
// ?format=prometheus the Prometheus text exposition, which promhttp
// writes itself and so bypasses wrap's JSON encoding. Both need
// agent:read, as upstream.
func (s *HTTPServer) metricsHandler() http.Handler {
	asJSON := s.wrap(s.metricsJSON)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("format") != "prometheus" {
			asJSON.ServeHTTP(w, r)
			return
		}
		if err := checkOrigin(r); err != nil {
			s.writeError(w, r, err)
			return
		}
		if err := s.authorize(r, (*acl.ACL).AllowAgentRead, "agent read"); err != nil {
			s.writeError(w, r, err)
			return
		}
		t := s.agent.telemetry
		if t == nil || t.prometheus == nil {
			s.writeError(w, r, codedErrorf(http.StatusBadRequest,
				"Prometheus metrics are not enabled: set telemetry { prometheus_metrics = true } in the agent's config"))
			return
		}
		t.prometheus.ServeHTTP(w, r)
	})
}

func (s *HTTPServer) metricsJSON(w http.ResponseWriter, r *http.Request) (any, error) {
	if f := r.URL.Query().Get("format"); f != "" && f != "json" {
		return nil, codedErrorf(http.StatusBadRequest, "Invalid format %q: use \"prometheus\", or none for JSON", f)
	}
	if err := s.authorize(r, (*acl.ACL).AllowAgentRead, "agent read"); err != nil {
		return nil, err
	}
	t := s.agent.telemetry
	if t == nil {
		return nil, codedErrorf(http.StatusServiceUnavailable, "metrics are not set up yet")
	}
	return t.inmem.DisplayMetrics(w, r)
}
