package agent_test

import (
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	nomadapi "github.com/hashicorp/nomad/api"

	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// BenchmarkHTTP_ServiceLookup measures what a consumer of the catalog
// waits for: GET /v1/service/:name of a service with three instances on a
// dev agent (server and client in one process), one request at a time
// over a keep-alive connection, as a load balancer polling it would. It
// reports the median and 99th percentile of the requests' latencies
// (the target: p50 under 1 ms). Run with -benchtime=1000x.
func BenchmarkHTTP_ServiceLookup(b *testing.B) {
	a := agenttest.NewDevAgent(b, nil)
	c, err := nomadapi.NewClient(&nomadapi.Config{Address: a.HTTPAddr})
	if err != nil {
		b.Fatal(err)
	}
	if _, _, err := c.Jobs().Register(serviceJob("shop", 3), nil); err != nil {
		b.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		regs, _, err := c.Services().Get("shop-api", &nomadapi.QueryOptions{WaitTime: time.Second})
		if err == nil && len(regs) == 3 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("3 instances of shop-api not registered within 30s: %v %v", regs, err)
		}
	}
	hc := &http.Client{}
	url := a.HTTPAddr + "/v1/service/shop-api"
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		resp, err := hc.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		lat = append(lat, time.Since(start))
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2])/1e6, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100])/1e6, "p99-ms")
}
