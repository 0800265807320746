package nomad

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	metrics "github.com/hashicorp/go-metrics"
	"github.com/shoenig/test/must"
	"pgregory.net/rapid"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// The leader's disconnect gauges say what an autoscaler and an on-call
// operator need: nodes by status per datacenter and pool (zeros included,
// so a status that empties reads 0), how long each disconnected node has
// been gone, the job's unknown allocation, and the capacity it holds in
// its pool. A ready node's allocations are not read at all.
func TestCollectGauges_Disconnect(t *testing.T) {
	st, err := state.NewStateStore(nil)
	must.NoError(t, err)
	ready, gone := mock.Node(), mock.Node()
	gone.NodePool = "edge"
	gone.Status = structs.NodeStatusDisconnected
	gone.StatusUpdatedAt = 1000
	must.NoError(t, st.UpsertNode(10, ready))
	must.NoError(t, st.UpsertNode(11, gone))
	job := mock.Job()
	must.NoError(t, st.UpsertJob(12, 0, job))
	unknown, running := mock.AllocForNode(gone), mock.AllocForNode(ready)
	unknown.Job, running.Job = job, job
	unknown.JobID, running.JobID = job.ID, job.ID
	must.NoError(t, st.UpsertAllocs(13, []*structs.Allocation{unknown, running}))
	unknown, running = unknown.Copy(), running.Copy()
	unknown.ClientStatus = structs.AllocClientStatusUnknown
	running.ClientStatus = structs.AllocClientStatusRunning
	must.NoError(t, st.UpdateAllocsFromClient(14, []*structs.Allocation{unknown, running}))

	g, err := collectGauges(st, 1090)
	must.NoError(t, err)
	get := func(name string, values ...string) float32 {
		t.Helper()
		s, ok := g[name][strings.Join(values, "\x00")+"\x00"]
		must.True(t, ok, must.Sprintf("%s%v in %v", name, values, g[name]))
		return s.value
	}
	must.Eq(t, 1, get(gaugeNodes, "ready", "dc1", "default"))
	must.Eq(t, 0, get(gaugeNodes, "disconnected", "dc1", "default"))
	must.Eq(t, 1, get(gaugeNodes, "disconnected", "dc1", "edge"))
	must.Eq(t, 0, get(gaugeNodes, "down", "dc1", "edge"))
	must.Eq(t, 90, get(gaugeNodeGone, gone.ID, "dc1", "edge"))
	must.MapLen(t, 1, g[gaugeNodeGone], must.Sprint("only disconnected nodes carry a node_id series"))
	must.Eq(t, 1, get(gaugeAllocsUnknown, job.ID, job.Namespace))
	must.Eq(t, 1, get(gaugeJobSummary+"unknown", job.ID, "web", job.Namespace))
	must.Eq(t, 1, get(gaugeJobSummary+"running", job.ID, "web", job.Namespace))
	must.Eq(t, float32(unknown.ComparableResources().CPUShares), get(gaugeUnknownCPU, "edge"))
	must.Eq(t, float32(unknown.ComparableResources().MemoryMB), get(gaugeUnknownMemory, "edge"))
	_, ok := g[gaugeUnknownCPU]["default\x00"]
	must.False(t, ok)
}

// A series that disappears (a node reconnected, a job purged) is set to
// zero once and then no longer emitted, so a Prometheus scrape does not go
// on showing a node as gone.
func TestGaugePublisher_ZeroesVanishedSeries(t *testing.T) {
	var got []string
	p := newGaugePublisher()
	p.set = func(key []string, v float32, labels []metrics.Label) {
		got = append(got, strings.Join(key, ".")+"{"+labels[0].Value+"}="+strconv.FormatFloat(float64(v), 'f', -1, 32))
	}
	first := gaugeFamilies{}
	first.set(gaugeNodeGone, 30, metrics.Label{Name: "node_id", Value: "n1"})
	p.publish(first)
	must.Eq(t, []string{"nomad.disconnect.node_gone_seconds{n1}=30"}, got)

	got = nil
	p.publish(gaugeFamilies{})
	must.Eq(t, []string{"nomad.disconnect.node_gone_seconds{n1}=0"}, got)

	got = nil
	p.publish(gaugeFamilies{})
	must.SliceEmpty(t, got)
}

// A series whose value did not change is emitted again only once the
// refresh has passed, a changed one at once, and a vanished one is still
// zeroed at once: each collection costs what changed, and every sink
// still gets every series within the refresh the agent derives from it.
func TestGaugePublisher_UnchangedSeriesWaitForTheRefresh(t *testing.T) {
	now := time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)
	var got []string
	p := newGaugePublisher()
	p.refresh, p.now = 5*time.Second, func() time.Time { return now }
	p.set = func(key []string, v float32, labels []metrics.Label) {
		got = append(got, labels[0].Value+"="+strconv.FormatFloat(float64(v), 'f', -1, 32))
	}
	families := func(vals map[string]float32) gaugeFamilies {
		g := gaugeFamilies{}
		for job, v := range vals {
			g.set(gaugeJobSummary+"queued", v, metrics.Label{Name: "job", Value: job})
		}
		return g
	}
	publish := func(after time.Duration, vals map[string]float32) []string {
		now = now.Add(after)
		got = nil
		p.publish(families(vals))
		sort.Strings(got)
		return got
	}
	must.Eq(t, []string{"a=1", "b=1"}, publish(0, map[string]float32{"a": 1, "b": 1}), must.Sprint("new series at once"))
	must.SliceEmpty(t, publish(time.Second, map[string]float32{"a": 1, "b": 1}), must.Sprint("nothing changed"))
	must.Eq(t, []string{"b=2"}, publish(time.Second, map[string]float32{"a": 1, "b": 2}), must.Sprint("a change at once"))
	must.Eq(t, []string{"a=0", "c=1"}, publish(time.Second, map[string]float32{"b": 2, "c": 1}), must.Sprint("a vanished series zeroed, a new one emitted"))
	must.SliceEmpty(t, publish(time.Second, map[string]float32{"b": 2, "c": 1}))
	must.Eq(t, []string{"b=2"}, publish(3*time.Second, map[string]float32{"b": 2, "c": 1}), must.Sprint("b's refresh came (5 s since it was sent)"))
	must.Eq(t, []string{"c=1"}, publish(time.Second, map[string]float32{"b": 2, "c": 1}), must.Sprint("c's refresh came"))

	p.refresh = 0
	must.Eq(t, []string{"b=2", "c=1"}, publish(time.Second, map[string]float32{"b": 2, "c": 1}), must.Sprint("refresh 0: every series at every publish"))
}

// BenchmarkCollectGauges measures one collection of the leader's gauges
// over 5,000 nodes (50 of them disconnected, each with 4 unknown
// allocations) and 500 jobs: the work done every collection_interval.
func BenchmarkCollectGauges(b *testing.B) {
	st, err := state.NewStateStore(nil)
	must.NoError(b, err)
	index := uint64(10)
	for i := range 5000 {
		n := mock.Node()
		n.NodePool = []string{"default", "edge"}[i%2]
		if i%100 == 0 {
			n.Status = structs.NodeStatusDisconnected
		}
		index++
		must.NoError(b, st.UpsertNode(index, n))
		if n.Status != structs.NodeStatusDisconnected {
			continue
		}
		var allocs []*structs.Allocation
		for range 4 {
			a := mock.AllocForNode(n)
			a.ClientStatus = structs.AllocClientStatusUnknown
			allocs = append(allocs, a)
		}
		index++
		must.NoError(b, st.UpsertAllocs(index, allocs))
	}
	for range 500 {
		index++
		must.NoError(b, st.UpsertJob(index, 0, mock.Job()))
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := collectGauges(st, 1_000); err != nil {
			b.Fatal(err)
		}
	}
}

// A server that stops leading sets the leader's gauges to zero once it
// has, so a sum over servers does not count the cluster twice after a
// leader change (the old leader's last values would linger in its sinks).
func TestServer_LeaderGaugesZeroedWhenLeadershipEnds(t *testing.T) {
	sink := metrics.NewInmemSink(time.Hour, time.Hour)
	_, err := metrics.NewGlobal(&metrics.Config{ServiceName: "nomad", FilterDefault: true}, sink)
	must.NoError(t, err)
	t.Cleanup(func() { _, _ = metrics.NewGlobal(&metrics.Config{}, &metrics.BlackholeSink{}) })

	s := testServer(t, func(c *Config) { c.StatsCollectionInterval = 10 * time.Millisecond })
	registerNode(t, s)
	const ready = "nomad.nomad.disconnect.nodes;status=ready;datacenter=dc1;node_pool=default"
	gauge := func(key string) (float32, bool) {
		data := sink.Data()
		intv := data[len(data)-1]
		intv.RLock()
		defer intv.RUnlock()
		g, ok := intv.Gauges[key]
		return g.Value, ok
	}
	wait.Poll(t, 10*time.Second, "the leader to publish its node", func() (bool, string) {
		v, _ := gauge(ready)
		return v == 1, fmt.Sprint(v)
	})

	must.NoError(t, s.Shutdown())
	for _, key := range []string{ready, "nomad.nomad.heartbeat.active"} {
		v, ok := gauge(key)
		must.True(t, ok, must.Sprint(key))
		must.Eq(t, 0, v, must.Sprint(key))
	}
}

// Whatever the mix of node statuses, sites and allocations: the nodes
// gauge of each site sums to its node count, exactly the disconnected
// nodes carry a node_id series, and each pool's unknown capacity is the
// sum over its disconnected nodes' live unknown allocations.
func TestCollectGauges_Invariants(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		st, err := state.NewStateStore(nil)
		must.NoError(rt, err)
		index := uint64(1)
		nodes := rapid.IntRange(0, 12).Draw(rt, "nodes")
		wantSite := map[string]int{}
		wantGone := 0
		wantCPU := map[string]float32{}
		for i := range nodes {
			n := mock.Node()
			n.Datacenter = rapid.SampledFrom([]string{"dc1", "dc2"}).Draw(rt, "dc")
			n.NodePool = rapid.SampledFrom([]string{"default", "edge"}).Draw(rt, "pool")
			n.Status = rapid.SampledFrom(nodeStatuses).Draw(rt, "status")
			index++
			must.NoError(rt, st.UpsertNode(index, n))
			wantSite[n.Datacenter+"\x00"+n.NodePool+"\x00"]++
			var allocs []*structs.Allocation
			for j := range rapid.IntRange(0, 3).Draw(rt, "allocs") {
				a := mock.AllocForNode(n)
				a.ClientStatus = rapid.SampledFrom([]string{
					structs.AllocClientStatusRunning, structs.AllocClientStatusUnknown, structs.AllocClientStatusComplete,
				}).Draw(rt, "client status")
				if rapid.Bool().Draw(rt, "stopped") {
					a.DesiredStatus = structs.AllocDesiredStatusStop
				}
				if n.Status == structs.NodeStatusDisconnected && a.ClientStatus == structs.AllocClientStatusUnknown && !a.ServerTerminalStatus() {
					wantCPU[n.NodePool] += float32(a.ComparableResources().CPUShares)
				}
				a.Name = structs.AllocName(a.JobID, a.TaskGroup, uint(i*10+j))
				allocs = append(allocs, a)
			}
			if n.Status == structs.NodeStatusDisconnected {
				wantGone++
			}
			if len(allocs) > 0 {
				index++
				must.NoError(rt, st.UpsertAllocs(index, allocs))
			}
		}

		g, err := collectGauges(st, 1_000_000)
		must.NoError(rt, err)
		gotSite := map[string]int{}
		for _, s := range g[gaugeNodes] {
			gotSite[s.labels[1].Value+"\x00"+s.labels[2].Value+"\x00"] += int(s.value)
		}
		must.Eq(rt, wantSite, gotSite)
		must.MapLen(rt, wantGone, g[gaugeNodeGone])
		for pool, cpu := range wantCPU {
			must.Eq(rt, cpu, g[gaugeUnknownCPU][pool+"\x00"].value, must.Sprint(pool))
		}
	})
}

// The node walk is kept while the nodes table is unchanged, and the
// gauges read through it are what a fresh walk gives, over random node
// writes (registrations, status changes, removals), allocation updates on
// disconnected nodes and the clock moving between collections.
func TestCollectGauges_KeptNodeWalkAsAFreshOne(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		st, err := state.NewStateStore(nil)
		must.NoError(rt, err)
		job := mock.Job()
		must.NoError(rt, st.UpsertJob(1, 0, job))
		var nodes []*structs.Node
		walk := &nodeWalk{}
		index, now := uint64(10), int64(1000)
		statuses := []string{structs.NodeStatusReady, structs.NodeStatusDisconnected, structs.NodeStatusDown, structs.NodeStatusInit}
		steps := rapid.IntRange(1, 30).Draw(rt, "steps")
		for range steps {
			index++
			now += int64(rapid.IntRange(0, 30).Draw(rt, "tick"))
			nodesWritten := true
			switch op := rapid.IntRange(0, 4).Draw(rt, "op"); {
			case op == 0 || len(nodes) == 0:
				n := mock.Node()
				n.NodePool = rapid.SampledFrom([]string{"default", "edge"}).Draw(rt, "pool")
				n.Status = rapid.SampledFrom(statuses).Draw(rt, "status")
				n.StatusUpdatedAt = now
				must.NoError(rt, st.UpsertNode(index, n))
				nodes = append(nodes, n)
			case op == 1:
				n := nodes[rapid.IntRange(0, len(nodes)-1).Draw(rt, "node")]
				must.NoError(rt, st.UpdateNodeStatus(index, n.ID, rapid.SampledFrom(statuses).Draw(rt, "to"), now, nil))
			case op == 2:
				n := nodes[rapid.IntRange(0, len(nodes)-1).Draw(rt, "node")]
				a := mock.AllocForNode(n)
				a.Job, a.JobID = job, job.ID
				must.NoError(rt, st.UpsertAllocs(index, []*structs.Allocation{a}))
				nodesWritten = false
			default: // nothing written: the clock alone moves
				nodesWritten = false
			}
			before := walk.index
			got, err := collectGaugesWith(st, now, walk)
			must.NoError(rt, err)
			if !nodesWritten && before != 0 {
				must.Eq(rt, before, walk.index, must.Sprint("the nodes table did not change: the walk is kept"))
			}
			want, err := collectGauges(st, now)
			must.NoError(rt, err)
			must.Eq(rt, want, got)
		}
		idx, err := st.Index(state.TableNodes)
		must.NoError(rt, err)
		must.Eq(rt, idx, walk.index)
	})
}

// BenchmarkCollectGauges_50000Nodes is the leader's collection at 50,000
// nodes and 1,000 jobs: walking every node each time, and with the walk
// kept while the nodes table is unchanged (a steady fleet's heartbeats).
func BenchmarkCollectGauges_50000Nodes(b *testing.B) {
	st, err := state.NewStateStore(nil)
	must.NoError(b, err)
	for i := range 50_000 {
		n := mock.Node()
		n.Datacenter = fmt.Sprintf("dc%d", i%10)
		must.NoError(b, st.UpsertNode(uint64(10+i), n))
	}
	for i := range 1_000 {
		must.NoError(b, st.UpsertJob(uint64(100_000+i), 0, mock.Job()))
	}
	for _, mode := range []string{"walk", "kept"} {
		b.Run(mode, func(b *testing.B) {
			walk := &nodeWalk{}
			for b.Loop() {
				if mode == "walk" {
					walk = &nodeWalk{}
				}
				if _, err := collectGaugesWith(st, 1_000, walk); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
