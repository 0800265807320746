package nomad

import (
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/go-memdb"
	metrics "github.com/hashicorp/go-metrics"

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

// siteDetector serialises the decisions of the watch loop and of the
// node status batches, so that one declaration is never written twice:
// each decides on the state the other's entry left.
type siteDetector struct {
	srv *Server
	mu  sync.Mutex
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

// siteOutageWatch runs the detector's check while this server leads.
func (s *Server) siteOutageWatch() watchLoop {
	return watchLoop{
		state: s.State, clock: s.clock, logger: s.logger,
		failed: "site outage check failed; retrying", retry: siteOutageRetry,
		pass: func(ws memdb.WatchSet) (time.Duration, error) { return 0, s.sites.check(ws) },
	}
}

// batchDeclarationsLocked decides, for a node status batch about to be
// written, the site outages its changes complete: the rule applied to the
// stored nodes with the batch's changes in place (each changed node's
// StatusUpdatedAt the batch's time), as the state will be once the entry
// is applied. Only declarations: the batch's entry carries them, with their
// node events, so a site's disconnects and its outage are one decision in
// one raft entry, and no leader change or check between them can lose or
// clear it. Clears stay with the watch loop, which writes them with the
// evaluations that place what the outage held. It returns nil when there
// is nothing to declare. d.mu must be held until the batch is applied.
func (d *siteDetector) batchDeclarationsLocked(req *structs.NodeBatchUpdateStatusRequest, now time.Time) (*structs.SiteOutageUpdateRequest, error) {
	changed := make(map[string]*structs.NodeStatusUpdate, len(req.Updates))
	relevant := false
	for _, u := range req.Updates {
		changed[u.NodeID] = u
		// Only a node leaving the site's live, reachable nodes can
		// complete an outage.
		relevant = relevant || u.Status == structs.NodeStatusDisconnected || u.Status == structs.NodeStatusDown
	}
	if !relevant {
		return nil, nil
	}
	in, err := d.srv.siteInput(nil, now)
	if err != nil || len(in.Policies) == 0 {
		return nil, err
	}
	for i, n := range in.Nodes {
		if u := changed[n.ID]; u != nil {
			c := *n // the stored node is shared: never changed
			c.Status, c.StatusUpdatedAt = u.Status, req.UpdatedAt
			in.Nodes[i] = &c
		}
	}
	ch := siteOutageChanges(in)
	if len(ch.Declare) == 0 {
		return nil, nil
	}
	ch.Clear = nil
	return d.srv.siteOutageRequest(ch, now)
}

// logDeclared logs and counts the outages an applied entry declared.
func (s *Server) logDeclared(declared []*structs.SiteOutage) {
	for _, o := range declared {
		s.logger.Info(o.Declared(), "site", o.ID)
		metrics.IncrCounterWithLabels(keySiteOutagesDeclared, 1, siteLabels(o))
	}
}

// check applies the rule to the current state, watching what it read when
// ws is set. Node status batches declare what their own changes complete
// (batchDeclarationsLocked); check declares what other changes do (a pool
// that starts asking for detection) and clears.
func (d *siteDetector) check(ws memdb.WatchSet) error {
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
	s.logDeclared(ch.Declare)
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
