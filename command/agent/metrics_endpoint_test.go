package agent_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nomad-edge/nomad/testutil/wait"

	nomadapi "github.com/hashicorp/nomad/api"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client"
	"github.com/nomad-edge/nomad/command/agent"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil"
	"github.com/nomad-edge/nomad/testutil/fault"
)

func ptr[T any](v T) *T { return &v }

// fastTelemetry samples every few milliseconds, so a test sees the
// leader's gauges without waiting for upstream's 10s intervals.
func fastTelemetry(prometheus bool) *agent.Telemetry {
	return &agent.Telemetry{
		CollectionInterval:         ptr(20 * time.Millisecond),
		InMemoryCollectionInterval: ptr(50 * time.Millisecond),
		InMemoryRetentionPeriod:    ptr(time.Minute),
		PrometheusMetrics:          ptr(prometheus),
	}
}

// scrape reads /v1/metrics?format=prometheus through the official client
// and parses it with Prometheus' own text parser, as a Prometheus server
// would: a malformed exposition fails here.
func scrape(t *testing.T, c *nomadapi.Client) map[string]*dto.MetricFamily {
	t.Helper()
	raw, err := c.Operator().Metrics(&nomadapi.QueryOptions{Params: map[string]string{"format": "prometheus"}})
	must.NoError(t, err)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(raw))
	must.NoError(t, err, must.Sprint(string(raw)))
	return fams
}

// value returns the value of the family's series whose labels include
// want, and whether there is one.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	fam := fams[name]
	if fam == nil {
		return 0, false
	}
next:
	for _, m := range fam.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Summary != nil:
			return float64(m.GetSummary().GetSampleCount()), true
		}
	}
	return 0, false
}

// The official Go client reads /v1/metrics as upstream's: the raw JSON
// (Operator().Metrics) and the decoded summary (MetricsSummary) carry the
// leader's broker gauges under upstream's names, and the Prometheus form
// parses and carries them too, with raft's own metrics (emitted through the
// sink the agent installed) and the Go runtime's.
func TestMetrics_OfficialClient(t *testing.T) {
	a := agenttest.NewDevAgent(t, func(c *agent.Config) { c.Telemetry = fastTelemetry(true) })
	c := officialClient(t, a)

	raw, err := c.Operator().Metrics(nil)
	must.NoError(t, err)
	var body map[string]any
	must.NoError(t, json.Unmarshal(raw, &body))
	for _, k := range []string{"Timestamp", "Gauges", "Counters", "Samples", "Points"} {
		must.MapContainsKey(t, body, k)
	}

	wait.Poll(t, 10*time.Second, "broker gauges in the JSON summary", func() (bool, string) {
		sum, _, err := c.Operator().MetricsSummary(nil)
		if err != nil {
			return false, err.Error()
		}
		var names []string
		for _, g := range sum.Gauges {
			if g.Name == "nomad.nomad.broker.total_ready" {
				return true, ""
			}
			names = append(names, g.Name)
		}
		return false, strings.Join(names, ", ")
	})

	wait.Poll(t, 10*time.Second, "broker and node gauges in the Prometheus scrape", func() (bool, string) {
		fams := scrape(t, c)
		_, broker := value(fams, "nomad_nomad_broker_total_ready", nil)
		ready, nodes := value(fams, "nomad_nomad_disconnect_nodes", map[string]string{"status": "ready", "datacenter": "dc1"})
		_, heartbeats := value(fams, "nomad_nomad_heartbeat_active", nil)
		_, goroutines := value(fams, "go_goroutines", nil)
		_, raft := value(fams, "nomad_raft_apply", nil)
		_, runtime := value(fams, "nomad_runtime_num_goroutines", nil)
		return broker && nodes && ready == 1 && heartbeats && goroutines && raft && runtime,
			fmt.Sprintf("broker=%v nodes=%v ready=%v heartbeats=%v go=%v raft=%v runtime=%v",
				broker, nodes, ready, heartbeats, goroutines, raft, runtime)
	})
}

// Without prometheus_metrics the Prometheus form is a 400 saying how to
// turn it on, and an unknown format is a 400 too: never JSON a scraper
// cannot read.
func TestMetrics_PrometheusDisabled(t *testing.T) {
	a := agenttest.NewDevAgent(t, func(c *agent.Config) { c.Telemetry = fastTelemetry(false) })
	c := officialClient(t, a)
	_, err := c.Operator().Metrics(&nomadapi.QueryOptions{Params: map[string]string{"format": "prometheus"}})
	code, msg := statusOf(t, err)
	must.Eq(t, http.StatusBadRequest, code)
	must.StrContains(t, msg, "prometheus_metrics = true")

	_, err = c.Operator().Metrics(&nomadapi.QueryOptions{Params: map[string]string{"format": "xml"}})
	code, msg = statusOf(t, err)
	must.Eq(t, http.StatusBadRequest, code)
	must.StrContains(t, msg, `Invalid format "xml"`)
}

// Metrics need agent:read, as upstream: an anonymous caller of an ACL
// cluster is refused in both forms, a management token reads both.
func TestMetrics_ACL(t *testing.T) {
	a := agenttest.NewDevAgent(t, func(c *agent.Config) {
		c.Telemetry = fastTelemetry(true)
		c.ACL = &agent.ACLConfig{Enabled: true}
	})
	anon := officialClient(t, a)
	tok, _, err := anon.ACLTokens().Bootstrap(nil)
	must.NoError(t, err)
	for _, params := range []map[string]string{nil, {"format": "prometheus"}} {
		_, err := anon.Operator().Metrics(&nomadapi.QueryOptions{Params: params})
		code, _ := statusOf(t, err)
		must.Eq(t, http.StatusForbidden, code, must.Sprint(params))
		_, err = anon.Operator().Metrics(&nomadapi.QueryOptions{Params: params, AuthToken: tok.SecretID})
		must.NoError(t, err, must.Sprint(params))
	}
}

// After a client's link is cut, a Prometheus scrape of the server shows
// the node disconnected in its datacenter and pool, how long it has been
// gone (the one series labelled by node ID), the job's unknown allocation
// and the capacity it holds; once the link heals and the node is ready
// again, the node's gone-gauge reads zero, and a disconnect duration was
// sampled.
func TestMetrics_DisconnectInPrometheusScrape(t *testing.T) {
	a := agenttest.NewDevAgent(t, func(c *agent.Config) {
		c.Telemetry = fastTelemetry(true)
		c.Client.Enabled = false
		c.Server.MinHeartbeatTTL = 300 * time.Millisecond
		c.Server.HeartbeatGrace = 300 * time.Millisecond
	})
	api := officialClient(t, a)
	link := testutil.NewFaultableRPC(a.Server())
	dir := t.TempDir()
	cl, err := client.NewClient(&client.Config{
		RPCHandler: link, StateDir: dir, AllocDir: dir + "/alloc", NodeName: "edge-1", NodePool: "edge",
	})
	must.NoError(t, err)
	t.Cleanup(func() { _ = cl.Destroy() })
	select {
	case <-cl.Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("client did not register within 30s")
	}

	job := edgeJob()
	var reg structs.JobRegisterResponse
	must.NoError(t, a.Server().RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &reg))
	wait.Poll(t, 20*time.Second, "the allocation running", func() (bool, string) {
		allocs, err := a.Server().State().AllocsByJob(nil, job.Namespace, job.ID, true)
		must.NoError(t, err)
		return len(allocs) == 1 && allocs[0].ClientStatus == structs.AllocClientStatusRunning, fmt.Sprint(len(allocs), " allocs")
	})

	link.Cut(fault.Reset)
	node := map[string]string{"node_id": cl.NodeID(), "node_pool": "edge", "datacenter": "dc1"}
	wait.Poll(t, 20*time.Second, "the disconnect in the scrape", func() (bool, string) {
		fams := scrape(t, api)
		nodes, _ := value(fams, "nomad_nomad_disconnect_nodes", map[string]string{"status": "disconnected", "node_pool": "edge", "datacenter": "dc1"})
		_, gone := value(fams, "nomad_nomad_disconnect_node_gone_seconds", node)
		unknown, _ := value(fams, "nomad_nomad_disconnect_allocs_unknown", map[string]string{"job": job.ID, "namespace": "default"})
		cpu, _ := value(fams, "nomad_nomad_disconnect_unknown_cpu_mhz", map[string]string{"node_pool": "edge"})
		summary, _ := value(fams, "nomad_nomad_job_summary_unknown", map[string]string{"job": job.ID, "task_group": "app"})
		return nodes == 1 && gone && unknown == 1 && cpu == 100 && summary == 1,
			fmt.Sprintf("disconnected=%v gone=%v unknown=%v cpu=%v summary=%v", nodes, gone, unknown, cpu, summary)
	})

	link.Heal()
	wait.Poll(t, 30*time.Second, "the reconnect in the scrape", func() (bool, string) {
		fams := scrape(t, api)
		ready, _ := value(fams, "nomad_nomad_disconnect_nodes", map[string]string{"status": "ready", "node_pool": "edge"})
		gone, _ := value(fams, "nomad_nomad_disconnect_node_gone_seconds", node)
		samples, _ := value(fams, "nomad_nomad_disconnect_duration_seconds", map[string]string{"node_pool": "edge"})
		resumed, _ := value(fams, "nomad_nomad_disconnect_reconnects", map[string]string{"outcome": "resumed"})
		return ready == 1 && gone == 0 && samples >= 1 && resumed >= 1,
			fmt.Sprintf("ready=%v gone=%v samples=%v resumed=%v", ready, gone, samples, resumed)
	})
}

// edgeJob is one mock task in a group that may stay disconnected for an
// hour, keeping its original on reconnect.
func edgeJob() *structs.Job {
	replace := false
	job := &structs.Job{
		ID: "edge-app", Datacenters: []string{"dc1"}, NodePool: "edge",
		TaskGroups: []*structs.TaskGroup{{
			Name: "app", Count: 1,
			Disconnect: &structs.DisconnectStrategy{
				LostAfter: time.Hour, Replace: &replace, Reconcile: structs.ReconcileOptionKeepOriginal,
			},
			Tasks: []*structs.Task{{
				Name: "app", Driver: "mock_driver",
				Config:    map[string]any{"run_for": "1h"},
				Resources: &structs.Resources{CPU: 100, MemoryMB: 64},
			}},
		}},
	}
	job.Canonicalize()
	return job
}

// A client agent with publish_node_metrics and publish_allocation_metrics
// reports, under upstream's names, its running allocation, the host's
// memory, disk and uptime, what its allocations take from the node and
// each task's allocated memory.
func TestMetrics_ClientGauges(t *testing.T) {
	a := agenttest.NewDevAgent(t, func(c *agent.Config) {
		c.Telemetry = fastTelemetry(true)
		c.Telemetry.PublishNodeMetrics = ptr(true)
		c.Telemetry.PublishAllocationMetrics = ptr(true)
	})
	api := officialClient(t, a)
	job := mockJob("gauges", "mock_driver", map[string]any{"run_for": "5m"})
	_, _, err := api.Jobs().Register(job, nil)
	must.NoError(t, err)

	node := map[string]string{"node_id": a.Client().NodeID(), "datacenter": "dc1", "node_pool": "default"}
	wait.Poll(t, 20*time.Second, "client gauges in the scrape", func() (bool, string) {
		fams := scrape(t, api)
		running, _ := value(fams, "nomad_client_allocations_running", node)
		mem, _ := value(fams, "nomad_client_host_memory_total", node)
		_, disk := value(fams, "nomad_client_host_disk_size", node)
		_, uptime := value(fams, "nomad_client_uptime", node)
		allocated, _ := value(fams, "nomad_client_allocated_memory", node)
		task, _ := value(fams, "nomad_client_allocs_memory_allocated", map[string]string{"job": "gauges", "task": "web"})
		return running == 1 && mem > 0 && disk && uptime && allocated == 64 && task == 64*1024*1024,
			fmt.Sprintf("running=%v mem=%v disk=%v uptime=%v allocated=%v task=%v", running, mem, disk, uptime, allocated, task)
	})
}

// A server with its raft log on disk reports raft-boltdb's metrics too,
// although that library emits through go-metrics' former module
// (armon/go-metrics).
func TestMetrics_RaftBoltDB(t *testing.T) {
	a := agenttest.NewDevAgent(t, func(c *agent.Config) {
		c.DevMode = false
		c.Client.Enabled = false
		c.Telemetry = fastTelemetry(true)
	})
	api := officialClient(t, a)
	wait.Poll(t, 10*time.Second, "raft-boltdb metrics in the scrape", func() (bool, string) {
		fams := scrape(t, api)
		_, ok := value(fams, "nomad_raft_boltdb_storeLogs", nil)
		var seen []string
		for n := range fams {
			if strings.HasPrefix(n, "nomad_raft") {
				seen = append(seen, n)
			}
		}
		return ok, strings.Join(seen, ", ")
	})
}

// With statsd_address and statsite_address the agent sends its metrics to
// a statsd over UDP and a statsite over TCP too, in their line format
// (name:value|type), as upstream's telemetry block does: operators whose
// dashboards read statsd get the agent's gauges there.
func TestMetrics_StatsdAndStatsiteSinks(t *testing.T) {
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	must.NoError(t, err)
	defer udp.Close()
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	must.NoError(t, err)
	defer tcp.Close()
	dd, err := net.ListenPacket("udp", "127.0.0.1:0")
	must.NoError(t, err)
	defer dd.Close()
	a := agenttest.NewDevAgent(t, func(c *agent.Config) {
		c.Telemetry = &agent.Telemetry{
			StatsdAddress: new(udp.LocalAddr().String()), StatsiteAddress: new(tcp.Addr().String()),
			DatadogAddress: new(dd.LocalAddr().String()), DatadogTags: []string{"site:edge-1", "tier:test"},
			CollectionInterval: new(100 * time.Millisecond),
		}
	})
	_ = a

	statsd := readDatagrams(t, udp, "statsd", "nomad.runtime.num_goroutines")
	must.RegexMatch(t, regexp.MustCompile(`(?m)^nomad\.runtime\.num_goroutines[^:]*:[0-9.]+\|g$`), statsd)

	must.NoError(t, tcp.(*net.TCPListener).SetDeadline(time.Now().Add(30*time.Second)))
	conn, err := tcp.Accept()
	must.NoError(t, err, must.Sprint("the agent dials its statsite"))
	defer conn.Close()
	must.NoError(t, conn.SetReadDeadline(time.Now().Add(30*time.Second)))
	buf := make([]byte, 64<<10)
	var statsite strings.Builder
	for !strings.Contains(statsite.String(), "nomad.runtime.num_goroutines") {
		n, err := conn.Read(buf)
		must.NoError(t, err, must.Sprintf("statsite got so far: %q", statsite.String()))
		statsite.Write(buf[:n])
	}

	// DogStatsD: the name without the host in it, the labels and
	// datadog_tags as tags.
	dogstatsd := readDatagrams(t, dd, "DogStatsD", "nomad.runtime.num_goroutines:")
	must.RegexMatch(t, regexp.MustCompile(`(?m)^nomad\.runtime\.num_goroutines:[0-9.]+\|g\|#site:edge-1,tier:test,host:[^,\s]+$`), dogstatsd)
}

// readDatagrams reads what pc receives, a line per datagram at least,
// until it holds want, for at most 30 s; it fails with what it got.
func readDatagrams(t *testing.T, pc net.PacketConn, sink, want string) string {
	t.Helper()
	must.NoError(t, pc.SetReadDeadline(time.Now().Add(30*time.Second)))
	buf := make([]byte, 64<<10)
	var got strings.Builder
	for !strings.Contains(got.String(), want) {
		n, _, err := pc.ReadFrom(buf)
		must.NoError(t, err, must.Sprintf("%s got so far: %q", sink, got.String()))
		got.Write(buf[:n])
		got.WriteByte('\n')
	}
	return got.String()
}
