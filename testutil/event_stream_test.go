package testutil_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/stream"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil"
	"github.com/nomad-edge/nomad/testutil/fault"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// eventLog reads a subscription in the background, so it never lags, and
// keeps what it read.
type eventLog struct {
	mu     sync.Mutex
	events []stream.Event
}

func follow(ctx context.Context, sub *stream.Subscription) *eventLog {
	l := &eventLog{}
	go func() {
		for {
			b, err := sub.Next(ctx)
			if err != nil {
				return
			}
			l.mu.Lock()
			l.events = append(l.events, b.Events...)
			l.mu.Unlock()
		}
	}()
	return l
}

// statuses lists, for the events of topic about id, the node's event type
// and status or the allocation's client status, repeats collapsed.
func (l *eventLog) statuses(topic stream.Topic, id string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, e := range l.events {
		if e.Topic != topic || e.Key != id {
			continue
		}
		var s string
		switch topic {
		case stream.TopicNode:
			s = e.Type + ":" + e.Payload.Node.Status
		case stream.TopicAllocation:
			s = e.Payload.Allocation.ClientStatus
		}
		if len(out) == 0 || out[len(out)-1] != s {
			out = append(out, s)
		}
	}
	return out
}

// firstType is the type of the first Allocation event of id with client
// status status.
func (l *eventLog) firstType(id, status string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.events {
		if e.Topic == stream.TopicAllocation && e.Key == id && e.Payload.Allocation.ClientStatus == status {
			return e.Type
		}
	}
	return ""
}

// hasDecision reports whether an Allocation event of id carried rec.
func (l *eventLog) hasDecision(id string, rec *structs.ReconnectDecision) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.events {
		if e.Topic == stream.TopicAllocation && e.Key == id && e.Payload.Allocation.ReconnectDecision != nil &&
			*e.Payload.Allocation.ReconnectDecision == *rec {
			return true
		}
	}
	return false
}

// A disconnect and a reconnect are visible on the event stream of a
// follower (every server publishes what its FSM applies): the node turns
// disconnected and then ready in NodeStreamEvent events, its allocation
// unknown and then running again in Allocation events, and the reconnect
// decision record reaches both copies and the stream. Dashboards and the
// UI follow a flaky fleet from this stream alone.
func TestMemCluster_DisconnectReconnect_OnEventStream(t *testing.T) {
	testutil.Bubble(t, func(t *testing.T) {
		c := testutil.NewMemCluster(t, testutil.MemClusterConfig{Servers: 3, Clients: 2})
		follower := c.Servers[(c.WaitForLeader()+1)%3]
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		log := follow(ctx, follower.EventBroker().Subscribe(stream.SubscribeRequest{
			Topics: map[stream.Topic][]string{stream.TopicNode: {"*"}, stream.TopicAllocation: {"edge-app"}},
		}))

		job := disconnectJob()
		original, cut := runOne(t, c, job)
		nodeID := original.NodeID
		c.Net.Isolate(testutil.ClientHost(cut), fault.Blackhole)
		wait.Eventually(t, 2*time.Minute, "node disconnected on the follower's stream", func() (bool, string) {
			s := log.statuses(stream.TopicNode, nodeID)
			return slices.Contains(s, stream.TypeNodeEvent+":"+structs.NodeStatusDisconnected), strings.Join(s, " ")
		})
		c.Net.Heal(testutil.ClientHost(cut))
		wait.Eventually(t, 2*time.Minute, "node ready and allocation running again", func() (bool, string) {
			nodes, allocs := log.statuses(stream.TopicNode, nodeID), log.statuses(stream.TopicAllocation, original.ID)
			seen := fmt.Sprintf("node %v; alloc %v", nodes, allocs)
			return len(nodes) > 0 && nodes[len(nodes)-1] == stream.TypeNodeEvent+":"+structs.NodeStatusReady &&
				len(allocs) > 0 && allocs[len(allocs)-1] == structs.AllocClientStatusRunning, seen
		})
		// The resolution is recorded on both copies, and the stream
		// carries it (the plan that stopped the replacement).
		st := c.Leader().State()
		orig := mustAlloc(t, st, original.ID)
		must.NotNil(t, orig.ReconnectDecision)
		rec := orig.ReconnectDecision
		must.Eq(t, structs.ReconnectRuleStrategy, rec.Rule)
		must.Eq(t, structs.ReconcileOptionKeepOriginal, rec.Strategy)
		must.Eq(t, original.ID, rec.KeptAllocID)
		rep := mustAlloc(t, st, rec.StoppedAllocID)
		must.Eq(t, rec, rep.ReconnectDecision)
		must.Eq(t, original.ID, rep.PreviousAllocation)
		must.True(t, log.hasDecision(rep.ID, rec), must.Sprint("the stopped replacement's event carries the record"))
		must.True(t, log.hasDecision(original.ID, rec), must.Sprint("the kept original's event carries the record"))

		must.Eq(t, stream.TypePlanResult, log.firstType(original.ID, structs.AllocClientStatusUnknown), must.Sprint("the servers mark it unknown"))

		must.Eq(t, []string{structs.AllocClientStatusPending, structs.AllocClientStatusRunning,
			structs.AllocClientStatusUnknown, structs.AllocClientStatusRunning}, log.statuses(stream.TopicAllocation, original.ID))
	})
}
