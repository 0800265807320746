package api

import (
	"cmp"
	"slices"
	"time"
)

// Node statuses. A disconnected node missed its heartbeats but hosts
// allocations that may still come back; only down means they must move.
const (
	NodeStatusInit         = "initializing"
	NodeStatusReady        = "ready"
	NodeStatusDisconnected = "disconnected"
	NodeStatusDown         = "down"
)

// Node scheduling eligibility, orthogonal to status.
const (
	NodeSchedulingEligible   = "eligible"
	NodeSchedulingIneligible = "ineligible"
)

// Node event subsystems.
const (
	NodeEventSubsystemDrain     = "Drain"
	NodeEventSubsystemDriver    = "Driver"
	NodeEventSubsystemHeartbeat = "Heartbeat"
	NodeEventSubsystemCluster   = "Cluster"
)

// Node is a client agent as the servers know it.
type Node struct {
	ID                    string
	Datacenter            string
	Name                  string
	HTTPAddr              string
	TLSEnabled            bool
	Attributes            map[string]string
	NodeResources         *NodeResources
	ReservedResources     *NodeReservedResources
	Meta                  map[string]string
	HostVolumes           map[string]*HostVolumeInfo
	NodeClass             string
	NodePool              string
	Drain                 bool
	DrainStrategy         *DrainStrategy
	LastDrain             *DrainMetadata
	SchedulingEligibility string
	Status                string
	StatusDescription     string
	// StatusUpdatedAt is Unix seconds.
	StatusUpdatedAt int64
	Events          []*NodeEvent
	Drivers         map[string]*DriverInfo
	// NodeMaxAllocs is the client's node_max_allocs; 0 is no cap.
	NodeMaxAllocs int
	CreateIndex   uint64
	ModifyIndex   uint64
}

// NodeResources is the node's total capacity.
type NodeResources struct {
	Cpu            NodeCpuResources
	Memory         NodeMemoryResources
	Disk           NodeDiskResources
	MinDynamicPort int
	MaxDynamicPort int
}

// NodeCpuResources is the node's CPU capacity, in MHz-shares and cores.
type NodeCpuResources struct {
	CpuShares          int64
	TotalCpuCores      uint16
	ReservableCpuCores []uint16
}

// NodeMemoryResources is the node's memory capacity.
type NodeMemoryResources struct {
	MemoryMB int64
}

// NodeDiskResources is the node's allocation-directory disk capacity.
type NodeDiskResources struct {
	DiskMB int64
}

// NodeReservedResources is capacity held back from scheduling (for the OS
// and the client agent itself).
type NodeReservedResources struct {
	Cpu      NodeReservedCpuResources
	Memory   NodeReservedMemoryResources
	Disk     NodeReservedDiskResources
	Networks NodeReservedNetworkResources
}

// NodeReservedCpuResources is reserved CPU.
type NodeReservedCpuResources struct {
	CpuShares uint64
}

// NodeReservedMemoryResources is reserved memory.
type NodeReservedMemoryResources struct {
	MemoryMB uint64
}

// NodeReservedDiskResources is reserved disk.
type NodeReservedDiskResources struct {
	DiskMB uint64
}

// NodeReservedNetworkResources lists host ports (e.g. "22,80-90") that are
// never handed out.
type NodeReservedNetworkResources struct {
	ReservedHostPorts string
}

// DriverInfo is a task driver's fingerprint on a node.
type DriverInfo struct {
	Attributes        map[string]string
	Detected          bool
	Healthy           bool
	HealthDescription string
	UpdateTime        time.Time
}

// NodeEvent is one entry of a node's history (registration, heartbeat
// missed, drain, driver health...).
type NodeEvent struct {
	Message     string
	Subsystem   string
	Details     map[string]string
	Timestamp   time.Time
	CreateIndex uint64
}

// NodeListStub is the row `/v1/nodes` returns per node.
type NodeListStub struct {
	Address               string
	ID                    string
	Attributes            map[string]string `json:",omitempty"`
	Datacenter            string
	Name                  string
	NodeClass             string
	NodePool              string
	Version               string
	Drain                 bool
	LastDrain             *DrainMetadata `json:",omitempty"`
	SchedulingEligibility string
	Status                string
	StatusDescription     string
	// StatusUpdatedAt is when Status last changed, in Unix seconds. Upstream's
	// list rows have no such field; `node status` shows from it how long a
	// node has been disconnected.
	StatusUpdatedAt   int64
	Drivers           map[string]*DriverInfo
	NodeResources     *NodeResources         `json:",omitempty"`
	ReservedResources *NodeReservedResources `json:",omitempty"`
	CreateIndex       uint64
	ModifyIndex       uint64
}

// Nodes is the handle on the node endpoints.
type Nodes struct {
	client *Client
}

// Nodes returns the handle on the node endpoints.
func (c *Client) Nodes() *Nodes { return &Nodes{client: c} }

// List returns the nodes (GET /v1/nodes), newest first.
func (n *Nodes) List(q *QueryOptions) ([]*NodeListStub, *QueryMeta, error) {
	var resp []*NodeListStub
	qm, err := n.client.query("/v1/nodes", &resp, q)
	if err != nil {
		return nil, nil, err
	}
	slices.SortStableFunc(resp, func(a, b *NodeListStub) int { return cmp.Compare(b.CreateIndex, a.CreateIndex) })
	return resp, qm, nil
}

// Info returns one node (GET /v1/node/:id).
func (n *Nodes) Info(nodeID string, q *QueryOptions) (*Node, *QueryMeta, error) {
	var resp Node
	qm, err := n.client.query("/v1/node/"+pathID(nodeID), &resp, q)
	if err != nil {
		return nil, nil, err
	}
	return &resp, qm, nil
}

// Allocations returns the allocations placed on a node
// (GET /v1/node/:id/allocations), newest first. Unlike the other listings
// these are full allocations, as upstream returns them.
func (n *Nodes) Allocations(nodeID string, q *QueryOptions) ([]*Allocation, *QueryMeta, error) {
	var resp []*Allocation
	qm, err := n.client.query("/v1/node/"+pathID(nodeID)+"/allocations", &resp, q)
	if err != nil {
		return nil, nil, err
	}
	sortAllocs(resp)
	return resp, qm, nil
}
