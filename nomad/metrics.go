package nomad

import (
	"strings"
	"time"

	metrics "github.com/hashicorp/go-metrics"

	"github.com/nomad-edge/nomad/helper/clock"
	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/scheduler"
)

// The server emits through go-metrics' process-wide instance, which the
// agent installs (a black hole otherwise). Every name is listed, with its
// type and labels, in website/content/docs/metrics.md. Keys of metrics
// emitted on RPC paths are package variables so that emitting allocates
// no more than go-metrics itself does.
var (
	keyPlanSubmit          = []string{"nomad", "plan", "submit"}
	keyPlanEvaluate        = []string{"nomad", "plan", "evaluate"}
	keyPlanApply           = []string{"nomad", "plan", "apply"}
	keyClientUpdateStatus  = []string{"nomad", "client", "update_status"}
	keyHeartbeatInvalidate = []string{"nomad", "heartbeat", "invalidate"}
	keyDisconnectDuration  = []string{"nomad", "disconnect", "duration_seconds"}
	keyReconnects          = []string{"nomad", "disconnect", "reconnects"}
	keyReplacementsPlaced  = []string{"nomad", "disconnect", "replacements_placed"}
	keyReplacementsStopped = []string{"nomad", "disconnect", "replacements_stopped"}
)

// disconnectCounters counts the scheduler's reconnect decisions and
// disconnect replacements, once their plan committed.
type disconnectCounters struct{}

var _ scheduler.Recorder = disconnectCounters{}

func (disconnectCounters) Reconnect(outcome, rule string) {
	metrics.IncrCounterWithLabels(keyReconnects, 1, []metrics.Label{{Name: "outcome", Value: outcome}, {Name: "rule", Value: rule}})
}

func (disconnectCounters) DisconnectReplacements(placed, stopped int) {
	if placed > 0 {
		metrics.IncrCounter(keyReplacementsPlaced, float32(placed))
	}
	if stopped > 0 {
		metrics.IncrCounter(keyReplacementsStopped, float32(stopped))
	}
}

// publishGauges publishes the leader's gauges every StatsCollectionInterval
// until stopCh closes, then sets them to zero once: a server that lost the
// leadership must not go on reporting the queues and the cluster it no
// longer leads, or a sum over servers would count them twice. A zero
// interval publishes nothing.
func (s *Server) publishGauges(stopCh <-chan struct{}) {
	interval := s.config.StatsCollectionInterval
	if interval <= 0 {
		return
	}
	p := newGaugePublisher()
	p.refresh, p.now = s.config.GaugeRefreshInterval, s.clock.Now
	walk := &nodeWalk{}
	for clock.Sleep(s.clock, interval, stopCh) {
		g, err := s.leaderGauges(walk)
		if err != nil {
			s.logger.Warn("metrics: reading state", "error", err)
			continue
		}
		p.publish(g)
	}
	p.publish(gaugeFamilies{})
}

// leaderGauges are the queues' depths and what one state snapshot says
// about jobs and disconnected nodes.
func (s *Server) leaderGauges(walk *nodeWalk) (gaugeFamilies, error) {
	snap, err := s.State().Snapshot()
	if err != nil {
		return nil, err
	}
	g, err := collectGaugesWith(&snap.StateStore, s.clock.Now().Unix(), walk)
	if err != nil {
		return nil, err
	}
	b := s.evalBroker.Stats()
	g.set("nomad.broker.total_ready", float32(b.TotalReady))
	g.set("nomad.broker.total_unacked", float32(b.TotalUnacked))
	g.set("nomad.broker.total_blocked", float32(b.TotalBlocked))
	// Upstream's newer name for the same count.
	g.set("nomad.broker.total_pending", float32(b.TotalBlocked))
	g.set("nomad.broker.total_waiting", float32(b.TotalWaiting))
	g.set("nomad.broker.total_cancelable", float32(b.TotalCancelable))
	for name, st := range b.ByScheduler {
		g.set("nomad.broker."+name+".ready", float32(st.Ready))
		g.set("nomad.broker."+name+".unacked", float32(st.Unacked))
	}
	bl := s.blockedEvals.Stats()
	g.set("nomad.blocked_evals.total_blocked", float32(bl.TotalBlocked))
	g.set("nomad.blocked_evals.total_escaped", float32(bl.TotalEscaped))
	g.set("nomad.plan.queue_depth", float32(s.planQueue.Stats().Depth))
	g.set("nomad.heartbeat.active", float32(s.heartbeats.count()))
	if err := collectSiteOutages(&snap.StateStore, g); err != nil {
		return nil, err
	}
	return g, nil
}

// count is the number of nodes whose heartbeat the leader times.
func (h *heartbeater) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.timers)
}

// series is one labelled value of a gauge, and when the publisher last
// emitted it.
type series struct {
	labels []metrics.Label
	value  float32
	sent   time.Time
}

// gaugeFamilies are the leader's gauges by name, each a set of series by
// their label values.
type gaugeFamilies map[string]map[string]series

func (g gaugeFamilies) set(name string, value float32, labels ...metrics.Label) {
	fam := g[name]
	if fam == nil {
		fam = map[string]series{}
		g[name] = fam
	}
	fam[seriesKey(labels)] = series{labels: labels, value: value}
}

// add adds value to the series, creating it at zero.
func (g gaugeFamilies) add(name string, value float32, labels ...metrics.Label) {
	prev := g[name][seriesKey(labels)].value
	g.set(name, prev+value, labels...)
}

func seriesKey(labels []metrics.Label) string {
	var b strings.Builder
	for _, l := range labels {
		b.WriteString(l.Value)
		b.WriteByte(0)
	}
	return b.String()
}

// Names of the state-derived gauges (the "nomad." service prefix is added
// by go-metrics).
const (
	gaugeJobSummary    = "nomad.job_summary."
	gaugeNodes         = "nomad.disconnect.nodes"
	gaugeAllocsUnknown = "nomad.disconnect.allocs_unknown"
	gaugeNodeGone      = "nomad.disconnect.node_gone_seconds"
	gaugeUnknownCPU    = "nomad.disconnect.unknown_cpu_mhz"
	gaugeUnknownMemory = "nomad.disconnect.unknown_memory_mb"
)

var nodeStatuses = []string{
	structs.NodeStatusInit, structs.NodeStatusReady, structs.NodeStatusDisconnected, structs.NodeStatusDown,
}

// collectGauges computes the state-derived gauges at now (Unix seconds):
// job summaries, nodes by status per datacenter and pool (every status,
// zero included, for each pair that has a node), allocations unknown per
// job, how long each disconnected node has been gone, and the capacity
// its unknown allocations hold per pool. Unknown allocations are read
// only from disconnected nodes, where they live (a reconnecting node's
// are settled within a heartbeat), so the cost follows the number of
// disconnected nodes, not of allocations.
func collectGauges(st *state.StateStore, now int64) (gaugeFamilies, error) {
	return collectGaugesWith(st, now, &nodeWalk{})
}

// nodeWalk is what the node gauges read from the nodes table, kept while
// the table does not change: a heartbeat that changes no status writes
// nothing, so at a steady fleet the walk of every node at each collection
// (18 % of the leader's CPU at 50,000 nodes) is skipped, and only the
// disconnected nodes' gauges, which move with the clock and the
// allocations, are read again.
type nodeWalk struct {
	index        uint64 // of the nodes table when walked; 0: never
	counts       map[nodeSite]map[string]int
	disconnected []*structs.Node
}

// nodeSite is a datacenter and node pool, as the node gauges label them.
type nodeSite struct{ dc, pool string }

// update walks the nodes again when their table changed since the last
// walk.
func (w *nodeWalk) update(st *state.StateStore) error {
	idx, err := st.Index(state.TableNodes)
	if err != nil {
		return err
	}
	if w.index != 0 && idx == w.index {
		return nil
	}
	iter, err := st.Nodes(nil)
	if err != nil {
		return err
	}
	counts := map[nodeSite]map[string]int{}
	var disconnected []*structs.Node
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		n := raw.(*structs.Node)
		at := nodeSite{n.Datacenter, n.NodePool}
		if counts[at] == nil {
			counts[at] = map[string]int{}
		}
		counts[at][n.Status]++
		if n.Status == structs.NodeStatusDisconnected {
			disconnected = append(disconnected, n)
		}
	}
	w.index, w.counts, w.disconnected = idx, counts, disconnected
	return nil
}

// collectGaugesWith is collectGauges reusing walk's node walk while the
// nodes table is unchanged.
func collectGaugesWith(st *state.StateStore, now int64, walk *nodeWalk) (gaugeFamilies, error) {
	g := gaugeFamilies{}
	if err := collectJobSummaries(st, g); err != nil {
		return nil, err
	}
	if err := walk.update(st); err != nil {
		return nil, err
	}
	for _, n := range walk.disconnected {
		g.set(gaugeNodeGone, float32(max(0, now-n.StatusUpdatedAt)), metrics.Label{Name: "node_id", Value: n.ID},
			metrics.Label{Name: "datacenter", Value: n.Datacenter}, metrics.Label{Name: "node_pool", Value: n.NodePool})
		if err := collectUnknownCapacity(st, n, g); err != nil {
			return nil, err
		}
	}
	for at, byStatus := range walk.counts {
		for _, status := range nodeStatuses {
			g.set(gaugeNodes, float32(byStatus[status]), metrics.Label{Name: "status", Value: status},
				metrics.Label{Name: "datacenter", Value: at.dc}, metrics.Label{Name: "node_pool", Value: at.pool})
		}
	}
	return g, nil
}

func collectJobSummaries(st *state.StateStore, g gaugeFamilies) error {
	iter, err := st.JobSummaries(nil)
	if err != nil {
		return err
	}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		js := raw.(*structs.JobSummary)
		unknown := 0
		for tg, s := range js.Summary {
			labels := []metrics.Label{
				{Name: "job", Value: js.JobID}, {Name: "task_group", Value: tg}, {Name: "namespace", Value: js.Namespace},
			}
			for _, v := range []struct {
				name string
				n    int
			}{
				{"queued", s.Queued}, {"complete", s.Complete}, {"failed", s.Failed}, {"running", s.Running},
				{"starting", s.Starting}, {"lost", s.Lost}, {"unknown", s.Unknown},
			} {
				g.set(gaugeJobSummary+v.name, float32(v.n), labels...)
			}
			unknown += s.Unknown
		}
		if unknown > 0 {
			g.set(gaugeAllocsUnknown, float32(unknown),
				metrics.Label{Name: "job", Value: js.JobID}, metrics.Label{Name: "namespace", Value: js.Namespace})
		}
	}
	return nil
}

// collectUnknownCapacity adds what the unknown allocations of the
// disconnected node n hold to its pool's gauges: the cluster may not
// count it as free, yet it does no work the servers can see.
func collectUnknownCapacity(st *state.StateStore, n *structs.Node, g gaugeFamilies) error {
	allocs, err := st.AllocsByNode(nil, n.ID)
	if err != nil {
		return err
	}
	pool := metrics.Label{Name: "node_pool", Value: n.NodePool}
	g.add(gaugeUnknownCPU, 0, pool)
	g.add(gaugeUnknownMemory, 0, pool)
	for _, a := range allocs {
		if a.ClientStatus != structs.AllocClientStatusUnknown || a.ServerTerminalStatus() {
			continue
		}
		r := a.ComparableResources()
		g.add(gaugeUnknownCPU, float32(r.CPUShares), pool)
		g.add(gaugeUnknownMemory, float32(r.MemoryMB), pool)
	}
	return nil
}

// gaugePublisher emits gauge families, remembering what it emitted last:
// a series gone since (a node that reconnected, a purged job) is set to
// zero once, so a sink that keeps last values (Prometheus, until its
// expiry) does not go on reporting it as current.
//
// A series whose value has not changed is emitted again only once refresh
// has passed since it last was (refresh 0: at every publish). Every job
// has seven summary series, so a leader of thousands of jobs emitted tens
// of thousands of unchanged values each second (a tenth of its CPU under
// a stream of registrations, benchmarks.md "Job registration"); the agent
// sets refresh short enough that every sink still holds every series
// (command/agent gaugeRefresh).
type gaugePublisher struct {
	last gaugeFamilies
	// set emits one gauge; go-metrics' global outside tests.
	set     func(key []string, val float32, labels []metrics.Label)
	refresh time.Duration
	now     func() time.Time
}

func newGaugePublisher() *gaugePublisher {
	return &gaugePublisher{last: gaugeFamilies{}, set: metrics.SetGaugeWithLabels, now: time.Now}
}

func (p *gaugePublisher) publish(g gaugeFamilies) {
	for name, fam := range p.last {
		for k, s := range fam {
			if _, ok := g[name][k]; !ok {
				p.set(strings.Split(name, "."), 0, s.labels)
			}
		}
	}
	now := p.now()
	for name, fam := range g {
		var key []string
		prev := p.last[name]
		for k, s := range fam {
			if was, ok := prev[k]; ok && was.value == s.value && p.refresh > 0 && now.Sub(was.sent) < p.refresh {
				s.sent = was.sent
				fam[k] = s
				continue
			}
			if key == nil {
				key = strings.Split(name, ".")
			}
			p.set(key, s.value, s.labels)
			s.sent = now
			fam[k] = s
		}
	}
	p.last = g
}
