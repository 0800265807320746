package api

import (
	"errors"
	"net/http"
	"time"
)

// Built-in node pools.
const (
	NodePoolAll     = "all"
	NodePoolDefault = "default"
)

// NodePool is a node pool in upstream's shape, plus Disconnect (ours).
type NodePool struct {
	Name                   string
	Description            string
	Meta                   map[string]string
	SchedulerConfiguration *NodePoolSchedulerConfiguration `json:",omitempty"`
	// Disconnect is the disconnect policy of the groups placed in the
	// pool that set none of their own. Not in upstream's API.
	Disconnect  *NodePoolDisconnect `json:",omitempty"`
	CreateIndex uint64
	ModifyIndex uint64
}

// NodePoolSchedulerConfiguration is upstream's per-pool scheduler
// override; the servers refuse it.
type NodePoolSchedulerConfiguration struct {
	SchedulerAlgorithm            string `json:",omitempty"`
	MemoryOversubscriptionEnabled *bool  `json:",omitempty"`
}

// NodePoolDisconnect is a pool's disconnect policy; LostAfter is in
// nanoseconds on the wire.
type NodePoolDisconnect struct {
	LostAfter time.Duration
	Replace   *bool  `json:",omitempty"`
	Reconcile string `json:",omitempty"`
	// SiteOutage is the pool's site outage detection (ours).
	SiteOutage *NodePoolSiteOutage `json:",omitempty"`
}

// NodePoolSiteOutage is a pool's site outage detection: Threshold is a
// share of a site's live nodes, Window in nanoseconds on the wire, Scope
// "datacenter" or "pool". Zero values take the servers' defaults.
type NodePoolSiteOutage struct {
	Threshold float64       `json:",omitempty"`
	Window    time.Duration `json:",omitempty"`
	Scope     string        `json:",omitempty"`
	MinNodes  int           `json:",omitempty"`
}

// NodePools is the handle on /v1/node/pool*.
type NodePools struct {
	client *Client
}

// NodePools returns the handle on node pools.
func (c *Client) NodePools() *NodePools { return &NodePools{client: c} }

// List lists the node pools the caller may read, by name.
func (n *NodePools) List(q *QueryOptions) ([]*NodePool, *QueryMeta, error) {
	var out []*NodePool
	qm, err := n.client.query("/v1/node/pools", &out, q)
	if err != nil {
		return nil, nil, err
	}
	return out, qm, nil
}

// Info reads one node pool.
func (n *NodePools) Info(name string, q *QueryOptions) (*NodePool, *QueryMeta, error) {
	if name == "" {
		return nil, nil, errors.New("missing node pool name")
	}
	var out NodePool
	qm, err := n.client.query("/v1/node/pool/"+pathID(name), &out, q)
	if err != nil {
		return nil, nil, err
	}
	return &out, qm, nil
}

// Register creates or updates a node pool.
func (n *NodePools) Register(pool *NodePool, w *WriteOptions) (*WriteMeta, error) {
	if pool == nil || pool.Name == "" {
		return nil, errors.New("missing node pool name")
	}
	return n.client.write(http.MethodPut, "/v1/node/pools", pool, nil, w)
}

// Delete deletes a node pool; it must hold no nodes and no live jobs.
func (n *NodePools) Delete(name string, w *WriteOptions) (*WriteMeta, error) {
	if name == "" {
		return nil, errors.New("missing node pool name")
	}
	return n.client.write(http.MethodDelete, "/v1/node/pool/"+pathID(name), nil, nil, w)
}

// ListJobs lists the jobs in a node pool.
func (n *NodePools) ListJobs(name string, q *QueryOptions) ([]*JobListStub, *QueryMeta, error) {
	var out []*JobListStub
	qm, err := n.client.query("/v1/node/pool/"+pathID(name)+"/jobs", &out, q)
	if err != nil {
		return nil, nil, err
	}
	return out, qm, nil
}

// SiteOutage is a site outage the servers declared for a pool's site
// (ours): Disconnected of Nodes live nodes went within Window (nanoseconds)
// before DeclaredAt (Unix nanoseconds). Datacenter is empty when the site
// is the whole pool.
type SiteOutage struct {
	ID           string
	Pool         string
	Datacenter   string
	DeclaredAt   int64
	Disconnected int
	Nodes        int
	Window       time.Duration
	CreateIndex  uint64
	ModifyIndex  uint64
}

// SiteOutages lists the site outages declared for a node pool's sites.
func (n *NodePools) SiteOutages(name string, q *QueryOptions) ([]*SiteOutage, *QueryMeta, error) {
	var out []*SiteOutage
	qm, err := n.client.query("/v1/node/pool/"+pathID(name)+"/site-outages", &out, q)
	if err != nil {
		return nil, nil, err
	}
	return out, qm, nil
}

// ListNodes lists the nodes in a node pool.
func (n *NodePools) ListNodes(name string, q *QueryOptions) ([]*NodeListStub, *QueryMeta, error) {
	var out []*NodeListStub
	qm, err := n.client.query("/v1/node/pool/"+pathID(name)+"/nodes", &out, q)
	if err != nil {
		return nil, nil, err
	}
	return out, qm, nil
}
