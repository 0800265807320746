package nomad

import (
	"context"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/go-memdb"
	metrics "github.com/hashicorp/go-metrics"

	"github.com/nomad-edge/nomad/helper/clock"
	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// This file is the leader's site outage detector (see
// docs/concepts/disconnected-clients.md, "Site outages"). It re-reads the
// nodes whenever they change and declares or clears outages through raft;
// the declared outages live in the state store, so every scheduler reads
// them from its snapshot and a new leader starts from them. The times of
// the recent disconnects are the nodes' own StatusUpdatedAt (the server
// time of their move to disconnected, carried through raft), so a new
// leader has them too: nothing the rule needs is kept only in memory.

var keySiteOutagesDeclared = []string{"nomad", "disconnect", "site_outages_declared"}

// gaugeSiteOutage is 1 for each declared site outage.
const gaugeSiteOutage = "nomad.disconnect.site_outage"

// siteOutageRetry is how soon a check that failed (no quorum for a
// moment) runs again.
const siteOutageRetry = time.Second

// sitePendingTTL bounds how long a disconnect the heartbeat path
// announced counts before the node's stored status shows it: its write is
// retried every heartbeatRetryDelay, and a leader that cannot write for
// this long has lost its quorum or its leadership.
const sitePendingTTL = 30 * time.Second

// siteDetector serialises the checks of the watch loop and of the
// heartbeat path, so that one declaration is never written twice.
type siteDetector struct {
	srv *Server
	mu  sync.Mutex
	// pending are the nodes the heartbeat path is about to mark
	// disconnected, with when it said so. They count as disconnected until
	// their stored status catches up: the declaration is written before
	// the node's own change, and its node events wake the watch loop,
	// which must not clear the outage in between.
	pending map[string]time.Time
}

// siteInput is what the rule decides from.
type siteInput struct {
	// Policies are the pools' site outage settings, by pool name; a pool
	// without one is absent.
	Policies map[string]*structs.SiteOutagePolicy
	Nodes    []*structs.Node
	Declared []*structs.SiteOutage
	Now      time.Time
}

// siteTally counts one site's nodes.
type siteTally struct {
	id, pool, dc string
	policy       *structs.SiteOutagePolicy
	// live are the nodes that are not down; disconnected those of them
	// that are disconnected, recent those that became so within the window;
	// away the disconnected and the initializing ones (back, but their
	// clients have not reported yet).
	live, disconnected, recent, away []string
}

// siteCleared is an outage the rule ends, with the site's count now.
type siteCleared struct {
	outage     *structs.SiteOutage
	away, live int
	// stillAway are the site's nodes still disconnected: what the outage
	// held on them is placed now.
	stillAway []string
}

// siteChanges is what the rule decides.
type siteChanges struct {
	Declare []*structs.SiteOutage
	// DeclareNodes are, per declared outage ID, its disconnected nodes.
	DeclareNodes map[string][]string
	Clear        []siteCleared
}

func (c siteChanges) empty() bool { return len(c.Declare) == 0 && len(c.Clear) == 0 }

// siteOutageChanges is the rule of "Site outages": a site (a pool's nodes
// in one datacenter, or the whole pool, per the pool's scope) is declared
// out when the nodes that became disconnected within the window (to the
// second) are at least threshold of its live (not down) nodes and at least
// min_nodes; a declared outage is cleared when its disconnected nodes,
// recent or not, together with those back but not yet reported
// (initializing), fall below threshold of its live nodes (nodes came back
// and reported, or went down when their windows ended), or its pool no
// longer asks for detection. Counting the initializing ones keeps the hold
// until the returning clients have said what runs. A declared outage is never cleared merely because time passed:
// that is what lets it outlast the window that declared it.
func siteOutageChanges(in siteInput) siteChanges {
	tallies := tallySites(in)
	out := siteChanges{DeclareNodes: map[string][]string{}}
	declared := map[string]bool{}
	for _, o := range in.Declared {
		declared[o.ID] = true
		t := tallies[o.ID]
		if t == nil || !reaches(len(t.away), len(t.live), t.policy.Threshold) {
			c := siteCleared{outage: o}
			if t != nil {
				c.away, c.live, c.stillAway = len(t.away), len(t.live), t.disconnected
			}
			out.Clear = append(out.Clear, c)
		}
	}
	ids := make([]string, 0, len(tallies))
	for id := range tallies {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		t := tallies[id]
		if declared[id] || len(t.recent) < max(t.policy.MinNodes, 1) || !reaches(len(t.recent), len(t.live), t.policy.Threshold) {
			continue
		}
		out.Declare = append(out.Declare, &structs.SiteOutage{
			ID: id, Pool: t.pool, Datacenter: t.dc, DeclaredAt: in.Now.UnixNano(),
			Disconnected: len(t.recent), Nodes: len(t.live), Window: t.policy.Window,
		})
		out.DeclareNodes[id] = t.disconnected
	}
	return out
}

func tallySites(in siteInput) map[string]*siteTally {
	tallies := map[string]*siteTally{}
	for _, n := range in.Nodes {
		pool := n.NodePool
		if pool == "" {
			pool = structs.DefaultNodePool
		}
		p := in.Policies[pool]
		if p == nil || n.Status == structs.NodeStatusDown {
			continue
		}
		id := structs.SiteID(pool, n.Datacenter, p.Scope)
		t := tallies[id]
		if t == nil {
			t = &siteTally{id: id, pool: pool, policy: p}
			if p.Scope != structs.SiteScopePool {
				t.dc = n.Datacenter
			}
			tallies[id] = t
		}
		t.live = append(t.live, n.ID)
		if n.Status == structs.NodeStatusInit {
			t.away = append(t.away, n.ID)
		}
		if n.Status != structs.NodeStatusDisconnected {
			continue
		}
		t.away = append(t.away, n.ID)
		t.disconnected = append(t.disconnected, n.ID)
		if in.Now.Unix()-n.StatusUpdatedAt <= int64(p.Window/time.Second) {
			t.recent = append(t.recent, n.ID)
		}
	}
	return tallies
}

// reaches reports whether part/whole ≥ threshold; the tolerance keeps
// 0.3 of 10 nodes at 3, not at a hair above it.
func reaches(part, whole int, threshold float64) bool {
	if whole == 0 {
		return false
	}
	return float64(part) >= threshold*float64(whole)-1e-9*math.Max(1, float64(whole))
}

// startSiteOutages runs the detector while this server leads.
func (s *Server) startSiteOutages(stopCh <-chan struct{}) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ctx, cancel := context.WithCancel(context.Background())
		go func() { <-stopCh; cancel() }()
		for {
			ws := memdb.NewWatchSet()
			st := s.State()
			ws.Add(st.AbandonCh())
			if err := s.sites.check(ws, nil); err != nil {
				s.logger.Error("site outage check failed; retrying", "error", err)
				if !clock.Sleep(s.clock, siteOutageRetry, stopCh) {
					return
				}
				continue
			}
			if err := ws.WatchCtx(ctx); err != nil {
				return
			}
		}
	}()
}

// beforeDisconnect runs the rule as if node were already disconnected, so
// that an outage its disconnect completes is declared in raft before the
// node's own change and its evaluations: no scheduler then sees the site's
// unknown allocations without the outage. The heartbeat path calls it.
func (d *siteDetector) beforeDisconnect(node *structs.Node) {
	if err := d.check(nil, node); err != nil {
		// The watch loop decides again once the node's change is written.
		d.srv.logger.Warn("site outage check before a disconnect failed", "node_id", node.ID, "error", err)
	}
}

// check applies the rule to the current state, watching what it read when
// ws is set; disconnecting, when set, counts as disconnected now.
func (d *siteDetector) check(ws memdb.WatchSet, disconnecting *structs.Node) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.srv
	if !s.IsLeader() {
		return nil
	}
	in, err := s.siteInput(ws, s.clock.Now())
	if err != nil {
		return err
	}
	if d.pending == nil {
		d.pending = map[string]time.Time{}
	}
	if disconnecting != nil {
		d.pending[disconnecting.ID] = in.Now
	}
	in.Nodes = withPending(in.Nodes, d.pending, in.Now)
	ch := siteOutageChanges(in)
	if ch.empty() {
		return nil
	}
	req, err := s.siteOutageRequest(ch, in.Now)
	if err != nil {
		return err
	}
	if _, _, err := s.raftApply(structs.SiteOutageUpdateRequestType, req); err != nil {
		return err
	}
	for _, o := range ch.Declare {
		s.logger.Info(o.Declared(), "site", o.ID)
		metrics.IncrCounterWithLabels(keySiteOutagesDeclared, 1, siteLabels(o))
	}
	for _, c := range ch.Clear {
		s.logger.Info(clearedMessage(c), "site", c.outage.ID, "evals", len(req.Evals))
	}
	return nil
}

func (s *Server) siteInput(ws memdb.WatchSet, now time.Time) (siteInput, error) {
	st := s.State()
	in := siteInput{Policies: map[string]*structs.SiteOutagePolicy{}, Now: now}
	pools, err := st.NodePoolsByNamePrefix(ws, "")
	if err != nil {
		return in, err
	}
	for raw := pools.Next(); raw != nil; raw = pools.Next() {
		p := raw.(*structs.NodePool)
		if p.Disconnect != nil && p.Disconnect.SiteOutage != nil {
			pol := p.Disconnect.SiteOutage.Copy()
			pol.Canonicalize()
			in.Policies[p.Name] = pol
		}
	}
	if in.Declared, err = st.SiteOutages(ws); err != nil {
		return in, err
	}
	if len(in.Policies) == 0 && len(in.Declared) == 0 {
		// Nothing to decide until a pool asks: node changes, by far the
		// most frequent writes, are not even watched.
		return in, nil
	}
	nodes, err := st.Nodes(ws)
	if err != nil {
		return in, err
	}
	for raw := nodes.Next(); raw != nil; raw = nodes.Next() {
		in.Nodes = append(in.Nodes, raw.(*structs.Node))
	}
	return in, nil
}

// withPending counts the pending nodes as disconnected since they were
// announced, and forgets those whose stored status has caught up (or that
// are gone, or were announced too long ago). The stored nodes are not
// changed.
func withPending(nodes []*structs.Node, pending map[string]time.Time, now time.Time) []*structs.Node {
	if len(pending) == 0 {
		return nodes
	}
	out := make([]*structs.Node, 0, len(nodes))
	seen := map[string]bool{}
	for _, m := range nodes {
		at, ok := pending[m.ID]
		seen[m.ID] = ok
		switch {
		case !ok:
		case m.Status == structs.NodeStatusDisconnected || m.Status == structs.NodeStatusDown || now.Sub(at) > sitePendingTTL:
			delete(pending, m.ID)
		default:
			c := *m
			c.Status, c.StatusUpdatedAt = structs.NodeStatusDisconnected, at.Unix()
			m = &c
		}
		out = append(out, m)
	}
	for id := range pending {
		if !seen[id] {
			delete(pending, id)
		}
	}
	return out
}

// siteOutageRequest is the raft entry of the changes: node events on the
// site's disconnected nodes and, for a cleared outage, an evaluation of
// every job on the nodes still away, which places what the outage held.
func (s *Server) siteOutageRequest(ch siteChanges, now time.Time) (*structs.SiteOutageUpdateRequest, error) {
	req := &structs.SiteOutageUpdateRequest{Declare: ch.Declare, NodeEvents: map[string]*structs.NodeEvent{}}
	for _, o := range ch.Declare {
		ev := structs.NewNodeEvent(structs.NodeEventSubsystemCluster, o.Declared(), now)
		for _, id := range ch.DeclareNodes[o.ID] {
			req.NodeEvents[id] = ev
		}
	}
	seen := map[string]bool{}
	for _, c := range ch.Clear {
		req.Clear = append(req.Clear, c.outage.ID)
		ev := structs.NewNodeEvent(structs.NodeEventSubsystemCluster, clearedMessage(c), now)
		for _, id := range c.stillAway {
			req.NodeEvents[id] = ev
			evals, err := s.nodeEvals(id)
			if err != nil {
				return nil, err
			}
			for _, e := range evals {
				if key := e.Namespace + "/" + e.JobID; !seen[key] {
					seen[key] = true
					e.TriggeredBy = structs.EvalTriggerSiteOutageCleared
					req.Evals = append(req.Evals, e)
				}
			}
		}
	}
	return req, nil
}

func clearedMessage(c siteCleared) string {
	return fmt.Sprintf("Site outage cleared for %s (%d/%d nodes still away)", c.outage.Site(), c.away, c.live)
}

func siteLabels(o *structs.SiteOutage) []metrics.Label {
	return []metrics.Label{{Name: "node_pool", Value: o.Pool}, {Name: "datacenter", Value: o.Datacenter}}
}

// collectSiteOutages sets the gauge of each declared site outage.
func collectSiteOutages(st *state.StateStore, g gaugeFamilies) error {
	outages, err := st.SiteOutages(nil)
	if err != nil {
		return err
	}
	for _, o := range outages {
		g.set(gaugeSiteOutage, 1, siteLabels(o)...)
	}
	return nil
}
