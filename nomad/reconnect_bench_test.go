package nomad

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/helper/clock/clocktest"
	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// reconnectFixture is one node whose n allocations of one job the servers
// hold as unknown: its client missed its heartbeats and has not come back.
// The server runs on a manual clock, so the disconnect takes no real time.
type reconnectFixture struct {
	s     *Server
	clock *clocktest.Manual
	node  *structs.Node
	job   *structs.Job
	ids   []string
}

func newReconnectFixture(tb testing.TB, n int, logger hclog.Logger) *reconnectFixture {
	tb.Helper()
	f := &reconnectFixture{clock: newManualClock()}
	cfg := DefaultConfig()
	cfg.DevMode = true
	cfg.RPCAddr = nil
	cfg.NumSchedulers = 2
	cfg.Clock = f.clock
	// Nothing advances the manual clock while an RPC waits for its batch.
	cfg.NodeStatusBatchWindow, cfg.AllocUpdateBatchWindow = 0, 0
	// The fixture's nodes register without introduction tokens; the
	// default (warn) would log each, and the log test counts WARN lines.
	cfg.ClientIntroduction.Enforcement = structs.IntroEnforcementNone
	// The test jumps the clock minutes at a time: a worker scheduling an
	// evaluation during a jump would see its delivery nacked for taking
	// longer than the nack timeout, and the redelivery (delayed on the
	// same clock) would hold the job's later evaluations until the next
	// jump, which may never come.
	cfg.EvalNackTimeout = 24 * time.Hour
	cfg.MinHeartbeatTTL = 10 * time.Second
	cfg.HeartbeatGrace = 10 * time.Second
	cfg.Logger = logger
	s, err := NewServer(cfg)
	must.NoError(tb, err)
	tb.Cleanup(func() { _ = s.Shutdown() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	must.NoError(tb, s.WaitForLeader(ctx))
	f.s = s

	f.node = mock.Node()
	f.node.NodeResources.Memory.MemoryMB = 64 * 1024
	var nodeResp structs.NodeUpdateResponse
	must.NoError(tb, s.RPC("Node.Register", &structs.NodeRegisterRequest{Node: f.node}, &nodeResp))

	f.job = mock.Job()
	tg := f.job.TaskGroups[0]
	tg.Count = n
	tg.EphemeralDisk.SizeMB = 10
	tg.Tasks[0].Resources = &structs.Resources{CPU: 1, MemoryMB: 10}
	window := time.Hour
	tg.MaxClientDisconnect = &window
	var reg structs.JobRegisterResponse
	must.NoError(tb, s.RPC("Job.Register", &structs.JobRegisterRequest{Job: f.job}, &reg))
	allocs := f.waitAllocs(tb, "placed", func(a []*structs.Allocation) bool { return len(a) == n })
	for _, a := range allocs {
		f.ids = append(f.ids, a.ID)
	}
	f.report(tb)

	// The link drops: no heartbeat within TTL + grace.
	f.clock.Advance(nodeResp.HeartbeatTTL + cfg.HeartbeatGrace)
	f.waitAllocs(tb, "all unknown", func(as []*structs.Allocation) bool {
		return count(as, func(a *structs.Allocation) bool { return a.ClientStatus == structs.AllocClientStatusUnknown }) == n
	})
	return f
}

// report pushes every allocation running, as a client does in one batch.
func (f *reconnectFixture) report(tb testing.TB) {
	tb.Helper()
	updates := make([]*structs.Allocation, len(f.ids))
	for i, id := range f.ids {
		updates[i] = &structs.Allocation{ID: id, ClientStatus: structs.AllocClientStatusRunning}
	}
	var out structs.GenericResponse
	must.NoError(tb, f.s.RPC("Node.UpdateAlloc", &structs.AllocUpdateRequest{NodeID: f.node.ID, Alloc: updates,
		WriteRequest: structs.WriteRequest{AuthToken: f.node.SecretID}}, &out))
}

// heartbeat sends the client's heartbeat and returns the node's status.
func (f *reconnectFixture) heartbeat(tb testing.TB) string {
	tb.Helper()
	var resp structs.NodeUpdateResponse
	must.NoError(tb, f.s.RPC("Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: f.node.ID, Status: structs.NodeStatusReady,
		WriteRequest: structs.WriteRequest{AuthToken: f.node.SecretID}}, &resp))
	n, err := f.s.State().NodeByID(nil, f.node.ID)
	must.NoError(tb, err)
	return n.Status
}

// reconnect is the whole reconnect path: the heartbeat that makes the node
// initializing, the client's push of every allocation, the reconnect
// evaluation that keeps them, and the heartbeat that makes the node ready.
func (f *reconnectFixture) reconnect(tb testing.TB) {
	tb.Helper()
	must.Eq(tb, structs.NodeStatusInit, f.heartbeat(tb))
	f.report(tb)
	f.waitAllocs(tb, "all reconnected and kept", func(as []*structs.Allocation) bool {
		return count(as, func(a *structs.Allocation) bool {
			return a.ClientStatus == structs.AllocClientStatusRunning && a.DesiredStatus == structs.AllocDesiredStatusRun &&
				!a.NeedsToReconnect()
		}) == len(f.ids)
	})
	must.Eq(tb, structs.NodeStatusReady, f.heartbeat(tb))
}

// waitAllocs waits on the state store's watch channels until cond holds
// for the job's allocations, and returns them.
func (f *reconnectFixture) waitAllocs(tb testing.TB, what string, cond func([]*structs.Allocation) bool) []*structs.Allocation {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		ws := memdb.NewWatchSet()
		allocs, err := f.s.State().AllocsByJob(ws, f.job.Namespace, f.job.ID, true)
		must.NoError(tb, err)
		if cond(allocs) {
			return allocs
		}
		if err := ws.WatchCtx(ctx); err != nil {
			seen := ""
			for _, a := range allocs {
				seen += fmt.Sprintf("[%s desired=%s client=%s reconnect=%v] ", a.ID[:8], a.DesiredStatus, a.ClientStatus, a.NeedsToReconnect())
			}
			evals, _ := f.s.State().EvalsByJob(nil, f.job.Namespace, f.job.ID)
			for _, e := range evals {
				seen += fmt.Sprintf("eval %s %s %s %q; ", e.ID[:8], e.TriggeredBy, e.Status, e.StatusDescription)
			}
			tb.Fatalf("allocations %s: not within 30s; %d allocations: %s; broker %+v", what, len(allocs), seen, f.s.evalBroker.Stats())
		}
	}
}

func count(as []*structs.Allocation, pred func(*structs.Allocation) bool) int {
	n := 0
	for _, a := range as {
		if pred(a) {
			n++
		}
	}
	return n
}

// BenchmarkServer_Reconnect1000 measures the reconnect path of a node that
// comes back with 1,000 allocations the servers hold as unknown: heartbeat
// (initializing), one Node.UpdateAlloc with 1,000 running updates, the
// reconnect evaluation through the scheduler and the plan applier, and the
// heartbeat that makes the node ready. Setting up the disconnect is not
// timed.
//
//	go test -run '^$' -bench Server_Reconnect1000 -benchmem -benchtime 10x ./nomad/
func BenchmarkServer_Reconnect1000(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		f := newReconnectFixture(b, 1000, hclog.NewNullLogger())
		b.StartTimer()
		f.reconnect(b)
		b.StopTimer()
		_ = f.s.Shutdown()
		b.StartTimer()
	}
}

// syncBuffer is a log sink for a server whose goroutines write concurrently.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *syncBuffer) count(msg string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Count(b.buf.String(), msg)
}

// An operator follows a disconnect and its reconnect in the server log at
// INFO, one line per transition: the missed heartbeats, the node back in
// contact, its allocations reported again (one line for the whole push,
// however many it brings), the node ready. Heartbeats that change nothing
// log nothing, so a node that stays initializing or ready adds no lines.
func TestServer_ReconnectLoggedOncePerTransition(t *testing.T) {
	out := &syncBuffer{}
	logger := hclog.New(&hclog.LoggerOptions{Name: "test", Level: hclog.Info, Output: out})
	t.Cleanup(func() {
		if t.Failed() {
			t.Log("server log:\n" + out.String())
		}
	})
	f := newReconnectFixture(t, 3, logger)
	// Re-checks of the disconnected node while it stays away log nothing.
	f.clock.Advance(2*time.Minute + 20*time.Second)
	must.Eq(t, 1, out.count(`node missed its heartbeats`))

	must.Eq(t, structs.NodeStatusInit, f.heartbeat(t))
	must.Eq(t, structs.NodeStatusInit, f.heartbeat(t))
	must.Eq(t, 1, out.count(`node reconnected; waiting for its allocation updates`))
	must.Eq(t, 1, out.count(`disconnected_for=2m`), must.Sprint("seconds resolution: StatusUpdatedAt is Unix seconds"))

	f.report(t)
	f.waitAllocs(t, "reconnected", func(as []*structs.Allocation) bool {
		return count(as, func(a *structs.Allocation) bool { return !a.NeedsToReconnect() }) == len(as)
	})
	must.Eq(t, 1, out.count(`allocations reported again after their node reconnected`))
	must.Eq(t, 1, out.count(fmt.Sprintf("allocs=%d", len(f.ids))))

	must.Eq(t, structs.NodeStatusReady, f.heartbeat(t))
	must.Eq(t, structs.NodeStatusReady, f.heartbeat(t))
	must.Eq(t, 1, out.count(`node ready`))
	must.Eq(t, 0, out.count(`[WARN]  test.server: `), must.Sprint(out.String()))
}
