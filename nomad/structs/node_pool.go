package structs

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"time"
)

// Built-in node pools, as upstream: every node without a pool is in
// "default"; "all" is not a pool a node can be in but one a job can ask
// for to run on every node.
const (
	NodePoolAll                = "all"
	NodePoolAllDescription     = "Node pool with all nodes in the cluster."
	NodePoolDefaultDescription = "Default node pool."
	maxNodePoolDescription     = 256
)

// ErrUnknownNodePool answers a read or delete of a pool that does not exist.
var ErrUnknownNodePool = errors.New("node pool not found")

var validNodePoolName = regexp.MustCompile(`^[a-zA-Z0-9-_]{1,128}$`)

// NodePool groups nodes; a job runs only on the nodes of its pool.
type NodePool struct {
	Name        string
	Description string
	Meta        map[string]string
	// SchedulerConfiguration is upstream's per-pool scheduler override (an
	// Enterprise feature there): a pool that sets it is refused rather than
	// stored unenforced.
	SchedulerConfiguration *NodePoolSchedulerConfiguration
	// Disconnect is this project's extension: the disconnect policy of
	// every group placed in the pool that sets none of its own.
	Disconnect  *NodePoolDisconnect `json:",omitempty"`
	CreateIndex uint64
	ModifyIndex uint64
}

// NodePoolSchedulerConfiguration is upstream's shape, kept so that a pool
// setting it is refused by name.
type NodePoolSchedulerConfiguration struct {
	SchedulerAlgorithm            string
	MemoryOversubscriptionEnabled *bool
}

// NodePoolDisconnect is the disconnect policy a pool gives its groups.
type NodePoolDisconnect struct {
	LostAfter time.Duration
	Replace   *bool
	Reconcile string
	// SiteOutage, when set, has the servers hold replacements for the
	// pool's sites that drop together (see SiteOutagePolicy).
	SiteOutage *SiteOutagePolicy `json:",omitempty"`
}

// Copy returns a copy.
func (d *NodePoolDisconnect) Copy() *NodePoolDisconnect {
	if d == nil {
		return nil
	}
	n := *d
	n.Replace = copyPtr(d.Replace)
	n.SiteOutage = d.SiteOutage.Copy()
	return &n
}

// IsBuiltIn reports whether the pool is one every cluster has.
func (p *NodePool) IsBuiltIn() bool {
	return p.Name == NodePoolAll || p.Name == DefaultNodePool
}

// BuiltInNodePools returns the pools every cluster has.
func BuiltInNodePools() []*NodePool {
	return []*NodePool{
		{Name: NodePoolAll, Description: NodePoolAllDescription, Meta: map[string]string{}},
		{Name: DefaultNodePool, Description: NodePoolDefaultDescription, Meta: map[string]string{}},
	}
}

// Validate checks a pool an operator asks to create or update, naming
// every problem at once.
func (p *NodePool) Validate() error {
	var pr problems
	if !validNodePoolName.MatchString(p.Name) {
		pr.add("invalid node pool name %q: use 1 to 128 letters, digits, dashes and underscores", p.Name)
	}
	if p.IsBuiltIn() {
		pr.add("modifying node pool %q is not allowed: it is built in", p.Name)
	}
	if len(p.Description) > maxNodePoolDescription {
		pr.add("node pool %q: description longer than %d characters", p.Name, maxNodePoolDescription)
	}
	if p.SchedulerConfiguration != nil {
		pr.add("node pool %q: scheduler_config is not supported", p.Name)
	}
	if d := p.Disconnect; d != nil {
		if d.LostAfter < 0 {
			pr.add("node pool %q: disconnect.lost_after can't be negative", p.Name)
		}
		switch d.Reconcile {
		case "", ReconcileOptionBestScore, ReconcileOptionKeepOriginal,
			ReconcileOptionKeepReplacement, ReconcileOptionLongestRunning:
		default:
			pr.add("node pool %q: disconnect.reconcile %q is not one of %v", p.Name, d.Reconcile, ReconcileOptions)
		}
		if d.SiteOutage != nil {
			d.SiteOutage.validate(p.Name, &pr)
		}
	}
	return pr.err()
}

// Copy returns a deep copy, for changing a pool read from the store.
func (p *NodePool) Copy() *NodePool {
	if p == nil {
		return nil
	}
	c := *p
	c.Meta = maps.Clone(p.Meta)
	c.Disconnect = p.Disconnect.Copy()
	if p.SchedulerConfiguration != nil {
		sc := *p.SchedulerConfiguration
		c.SchedulerConfiguration = &sc
	}
	return &c
}

// NodePoolMissingError is the refusal of a job naming a pool that does
// not exist (HTTP 400).
func NodePoolMissingError(name string) error {
	return fmt.Errorf("%w: nonexistent node pool %q", ErrInvalidRequest, name)
}

// NodePoolListRequest lists pools, optionally by name prefix.
type NodePoolListRequest struct {
	QueryOptions
}

// NodePoolListResponse is the pools the caller may see.
type NodePoolListResponse struct {
	NodePools []*NodePool
	QueryMeta
}

// NodePoolSpecificRequest names one pool.
type NodePoolSpecificRequest struct {
	Name string
	QueryOptions
}

// SingleNodePoolResponse is one pool, or nil.
type SingleNodePoolResponse struct {
	NodePool *NodePool
	QueryMeta
}

// NodePoolUpsertRequest creates or updates pools.
type NodePoolUpsertRequest struct {
	NodePools []*NodePool
	WriteRequest
}

// NodePoolDeleteRequest deletes pools by name.
type NodePoolDeleteRequest struct {
	Names []string
	WriteRequest
}

// NodePoolJobsResponse is the jobs of a pool.
type NodePoolJobsResponse struct {
	Jobs []*JobListStub
	QueryMeta
}

// NodePoolNodesResponse is the nodes of a pool.
type NodePoolNodesResponse struct {
	Nodes []*NodeListStub
	QueryMeta
}
