package structs

import (
	"fmt"
	"time"
)

// Site scopes of a pool's site outage detection: each datacenter of the
// pool is a site, or the whole pool is one.
const (
	SiteScopeDatacenter = "datacenter"
	SiteScopePool       = "pool"
)

// Defaults of a site_outage block that leaves a setting out.
const (
	DefaultSiteOutageThreshold = 0.5
	DefaultSiteOutageWindow    = time.Minute
	DefaultSiteOutageMinNodes  = 2
)

// SiteOutagePolicy is a pool's site outage detection (ours; see
// docs/concepts/disconnected-clients.md, "Site outages"): when at least
// Threshold of a site's live nodes became disconnected within Window (and
// at least MinNodes of them), the servers declare a site outage and hold
// the replacements of the site's unknown allocations.
type SiteOutagePolicy struct {
	// Threshold is the share of the site's live nodes, in (0, 1].
	Threshold float64
	Window    time.Duration
	// Scope is SiteScopeDatacenter (the default) or SiteScopePool.
	Scope string
	// MinNodes is the fewest disconnected nodes that make an outage, so
	// that one node of a small site dropping stays a node's disconnect.
	MinNodes int
}

// Copy returns a copy.
func (p *SiteOutagePolicy) Copy() *SiteOutagePolicy {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}

// Canonicalize fills in the defaults of the settings left out (zero), so
// that what is stored, shown and applied is the same.
func (p *SiteOutagePolicy) Canonicalize() {
	if p == nil {
		return
	}
	if p.Threshold == 0 {
		p.Threshold = DefaultSiteOutageThreshold
	}
	if p.Window == 0 {
		p.Window = DefaultSiteOutageWindow
	}
	if p.Scope == "" {
		p.Scope = SiteScopeDatacenter
	}
	if p.MinNodes == 0 {
		p.MinNodes = DefaultSiteOutageMinNodes
	}
}

func (p *SiteOutagePolicy) validate(pool string, pr *problems) {
	if p.Threshold < 0 || p.Threshold > 1 {
		pr.add("node pool %q: disconnect.site_outage.threshold %g must be greater than 0 and at most 1", pool, p.Threshold)
	}
	if p.Window < 0 {
		pr.add("node pool %q: disconnect.site_outage.window can't be negative", pool)
	}
	switch p.Scope {
	case "", SiteScopeDatacenter, SiteScopePool:
	default:
		pr.add("node pool %q: disconnect.site_outage.scope %q is not one of [%s %s]", pool, p.Scope, SiteScopeDatacenter, SiteScopePool)
	}
	if p.MinNodes < 0 {
		pr.add("node pool %q: disconnect.site_outage.min_nodes can't be negative", pool)
	}
}

// SiteID names the site of a node of pool in datacenter dc under scope.
func SiteID(pool, dc, scope string) string {
	if scope == SiteScopePool {
		return pool
	}
	return pool + "/" + dc
}

// SiteOutage is a declared site outage, kept in the state store (through
// raft) so that every scheduler sees it and a new leader keeps it.
type SiteOutage struct {
	// ID is SiteID(Pool, Datacenter, scope).
	ID   string
	Pool string
	// Datacenter is empty when the site is the whole pool.
	Datacenter string
	// DeclaredAt is the server time of the declaration, Unix nanoseconds.
	DeclaredAt int64
	// Disconnected of Nodes live nodes became disconnected within Window:
	// what made the servers declare it.
	Disconnected int
	Nodes        int
	Window       time.Duration
	CreateIndex  uint64
	ModifyIndex  uint64
}

// Covers reports whether the node is one of the site's.
func (o *SiteOutage) Covers(n *Node) bool {
	if n == nil || poolOf(n.NodePool) != o.Pool {
		return false
	}
	return o.Datacenter == "" || o.Datacenter == n.Datacenter
}

// Site is how the operator reads the site's name: "dc1 in node pool
// edge", or "node pool edge".
func (o *SiteOutage) Site() string {
	if o.Datacenter == "" {
		return "node pool " + o.Pool
	}
	return o.Datacenter + " in node pool " + o.Pool
}

// Declared is the message of the declaration, as logged and recorded on
// the site's nodes: "Site outage declared for dc1 in node pool edge (6/8
// nodes disconnected within 1m)".
func (o *SiteOutage) Declared() string {
	return fmt.Sprintf("Site outage declared for %s (%d/%d nodes disconnected within %s)",
		o.Site(), o.Disconnected, o.Nodes, shortDuration(o.Window))
}

func poolOf(name string) string {
	if name == "" {
		return DefaultNodePool
	}
	return name
}

// SiteOutageUpdateRequest declares and clears site outages in one raft
// entry, with the node events that tell the site's nodes and, for a
// cleared outage, the evaluations that place what it held.
type SiteOutageUpdateRequest struct {
	Declare []*SiteOutage
	// Clear are IDs of declared outages.
	Clear []string
	// NodeEvents are appended to the nodes they name.
	NodeEvents map[string]*NodeEvent
	Evals      []*Evaluation
	WriteRequest
}

// SiteOutageListResponse is the outages declared for a pool's sites.
type SiteOutageListResponse struct {
	SiteOutages []*SiteOutage
	QueryMeta
}
