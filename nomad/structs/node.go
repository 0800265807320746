package structs

import (
	"maps"
	"slices"
	"time"
)

// Node statuses. Only down means the node's allocations must move;
// disconnected nodes may come back and keep their allocations.
const (
	NodeStatusInit         = "initializing"
	NodeStatusReady        = "ready"
	NodeStatusDown         = "down"
	NodeStatusDisconnected = "disconnected"
)

// ValidNodeStatus reports whether s is a node status.
func ValidNodeStatus(s string) bool {
	switch s {
	case NodeStatusInit, NodeStatusReady, NodeStatusDown, NodeStatusDisconnected:
		return true
	}
	return false
}

// Scheduling eligibility.
const (
	NodeSchedulingEligible   = "eligible"
	NodeSchedulingIneligible = "ineligible"
)

// Node event subsystems and messages.
const (
	NodeEventSubsystemCluster   = "Cluster"
	NodeEventSubsystemDriver    = "Driver"
	NodeRegisterEventRegistered = "Node registered"
	// NodeRegisterEventReregistered: a down node registered again (upstream's text).
	NodeRegisterEventReregistered = "Node re-registered"
	NodeEventHeartbeatMissed      = "Node heartbeat missed"
	// NodeEventHeartbeatReregistered: a down node back by heartbeat
	// (upstream's text; integrations key on it).
	NodeEventHeartbeatReregistered = "Node reregistered by heartbeat"
	NodeEventReconnected           = "Node reconnected"
	NodeEventNodeReady             = "Node ready"

	// MaxRetainedNodeEvents bounds the event history kept on a node.
	MaxRetainedNodeEvents = 10
)

// Node is a client machine that runs allocations.
type Node struct {
	ID                    string
	SecretID              string `codec:"SecretID" json:"-"`
	Datacenter            string
	Name                  string
	HTTPAddr              string
	Attributes            map[string]string
	NodeResources         *NodeResources
	ReservedResources     *NodeReservedResources
	Links                 map[string]string
	Meta                  map[string]string
	HostVolumes           map[string]*ClientHostVolumeConfig // the client's host_volume blocks by name
	NodeClass             string
	NodePool              string
	Drain                 bool
	DrainStrategy         *DrainStrategy
	LastDrain             *DrainMetadata
	SchedulingEligibility string
	Status                string
	StatusDescription     string
	StatusUpdatedAt       int64
	Events                []*NodeEvent
	Drivers               map[string]*DriverInfo
	// NodeMaxAllocs caps how many allocations the scheduler places on
	// the node (client node_max_allocs); 0 is no cap.
	NodeMaxAllocs int
	CreateIndex   uint64
	ModifyIndex   uint64
}

// Ready reports whether the scheduler may place work on the node.
func (n *Node) Ready() bool {
	return n.Status == NodeStatusReady && !n.Drain && n.SchedulingEligibility != NodeSchedulingIneligible
}

// TerminalStatus reports whether the node is down: its allocations must move.
func (n *Node) TerminalStatus() bool { return n.Status == NodeStatusDown }

// Copy returns a deep copy.
func (n *Node) Copy() *Node {
	if n == nil {
		return nil
	}
	c := *n
	c.Attributes = maps.Clone(n.Attributes)
	c.Links = maps.Clone(n.Links)
	c.Meta = maps.Clone(n.Meta)
	c.HostVolumes = CopyHostVolumes(n.HostVolumes)
	c.DrainStrategy = n.DrainStrategy.Copy()
	c.LastDrain = n.LastDrain.Copy()
	if n.NodeResources != nil {
		r := *n.NodeResources
		r.NodeNetworks = nil
		for _, nw := range n.NodeResources.NodeNetworks {
			if nw == nil {
				continue
			}
			cp := *nw
			cp.Addresses = slices.Clone(nw.Addresses)
			r.NodeNetworks = append(r.NodeNetworks, &cp)
		}
		c.NodeResources = &r
	}
	if n.ReservedResources != nil {
		r := *n.ReservedResources
		c.ReservedResources = &r
	}
	c.Events = make([]*NodeEvent, len(n.Events))
	for i, e := range n.Events {
		c.Events[i] = e.Copy()
	}
	if n.Drivers != nil {
		c.Drivers = make(map[string]*DriverInfo, len(n.Drivers))
		for k, d := range n.Drivers {
			c.Drivers[k] = d.Copy()
		}
	}
	return &c
}

// Sanitize returns a copy without the node's secret, for every read that
// leaves the servers: whoever holds the secret can speak for the node. The
// copy is shallow (maps and slices are shared with n), which is enough for
// a reply that is only encoded.
func (n *Node) Sanitize() *Node {
	if n == nil {
		return nil
	}
	c := *n
	c.SecretID = ""
	return &c
}

// AddEvent appends an event, keeping at most MaxRetainedNodeEvents.
func (n *Node) AddEvent(e *NodeEvent) {
	n.Events = append(n.Events, e)
	if over := len(n.Events) - MaxRetainedNodeEvents; over > 0 {
		n.Events = slices.Clone(n.Events[over:])
	}
}

// Stub returns the list form of the node.
func (n *Node) Stub() *NodeListStub {
	addr, _, _ := cutLast(n.HTTPAddr, ":")
	return &NodeListStub{
		Address:               addr,
		ID:                    n.ID,
		Attributes:            n.Attributes,
		Datacenter:            n.Datacenter,
		Name:                  n.Name,
		NodeClass:             n.NodeClass,
		NodePool:              n.NodePool,
		Version:               n.Attributes["nomad.version"],
		Drain:                 n.Drain,
		LastDrain:             n.LastDrain,
		SchedulingEligibility: n.SchedulingEligibility,
		Status:                n.Status,
		StatusDescription:     n.StatusDescription,
		StatusUpdatedAt:       n.StatusUpdatedAt,
		Drivers:               n.Drivers,
		NodeResources:         n.NodeResources,
		ReservedResources:     n.ReservedResources,
		CreateIndex:           n.CreateIndex,
		ModifyIndex:           n.ModifyIndex,
	}
}

func cutLast(s, sep string) (before, after string, found bool) {
	for i := len(s) - len(sep); i >= 0; i-- {
		if s[i:i+len(sep)] == sep {
			return s[:i], s[i+len(sep):], true
		}
	}
	return s, "", false
}

// NodeListStub is the list form of a node, as /v1/nodes returns it.
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
	// StatusUpdatedAt (Unix seconds) is ours only: `node status` lists how
	// long a node has been disconnected.
	StatusUpdatedAt   int64
	Drivers           map[string]*DriverInfo
	NodeResources     *NodeResources         `json:",omitempty"`
	ReservedResources *NodeReservedResources `json:",omitempty"`
	CreateIndex       uint64
	ModifyIndex       uint64
}

// NodeEvent is one entry of a node's history.
type NodeEvent struct {
	Message     string
	Subsystem   string
	Details     map[string]string
	Timestamp   time.Time
	CreateIndex uint64
}

// NewNodeEvent returns an event stamped at now.
func NewNodeEvent(subsystem, message string, now time.Time) *NodeEvent {
	return &NodeEvent{Subsystem: subsystem, Message: message, Timestamp: now}
}

// Copy returns a copy.
func (e *NodeEvent) Copy() *NodeEvent {
	if e == nil {
		return nil
	}
	c := *e
	c.Details = maps.Clone(e.Details)
	return &c
}

// DriverInfo is a driver's fingerprint on a node.
type DriverInfo struct {
	Attributes        map[string]string
	Detected          bool
	Healthy           bool
	HealthDescription string
	UpdateTime        time.Time
}

// Copy returns a copy.
func (d *DriverInfo) Copy() *DriverInfo {
	if d == nil {
		return nil
	}
	c := *d
	c.Attributes = maps.Clone(d.Attributes)
	return &c
}

// NodeResources is what a node offers.
type NodeResources struct {
	Cpu    NodeCpuResources
	Memory NodeMemoryResources
	Disk   NodeDiskResources

	MinDynamicPort int
	MaxDynamicPort int

	// NodeNetworks are the node's host networks, upstream's shape: one
	// per interface, each address named by the host network (Alias) it
	// serves. A port's host_network is placed only on a node with an
	// address of that alias; "default" is the node's network address.
	NodeNetworks []*NodeNetworkResource `json:",omitempty"`
}

// NodeNetworkResource is one interface of a node's host networks.
type NodeNetworkResource struct {
	Mode      string // "host", or "bridge" for the client's bridge
	Device    string
	Addresses []NodeNetworkAddress
}

// NodeNetworkAddress is one address of an interface, serving the host
// network Alias; ReservedPorts ("22,8000-8100") are never handed out on it.
type NodeNetworkAddress struct {
	Family        string // "ipv4" or "ipv6"
	Alias         string
	Address       string
	ReservedPorts string `json:",omitempty"`
}

// HasNetworkMode reports whether the node's client can give allocations a
// network of mode (NetworkModeBridge); host mode every node has.
func (n *Node) HasNetworkMode(mode string) bool {
	if mode == "" || mode == NetworkModeHost {
		return true
	}
	if n == nil || n.NodeResources == nil {
		return false
	}
	for _, nw := range n.NodeResources.NodeNetworks {
		if nw != nil && nw.Mode == mode {
			return true
		}
	}
	return false
}

// HostNetworkAddress returns the address of the node's host network
// alias, and its reserved ports.
func (n *Node) HostNetworkAddress(alias string) (NodeNetworkAddress, bool) {
	if n == nil || n.NodeResources == nil {
		return NodeNetworkAddress{}, false
	}
	for _, nw := range n.NodeResources.NodeNetworks {
		if nw == nil {
			continue
		}
		for _, a := range nw.Addresses {
			if a.Alias == alias {
				return a, true
			}
		}
	}
	return NodeNetworkAddress{}, false
}

// NodeCpuResources is the node's CPU in MHz shares.
type NodeCpuResources struct {
	CpuShares     int64
	TotalCpuCores uint16
}

// NodeMemoryResources is the node's memory.
type NodeMemoryResources struct {
	MemoryMB int64
}

// NodeDiskResources is the node's disk for allocation directories.
type NodeDiskResources struct {
	DiskMB int64
}

// NodeReservedResources is held back from scheduling for the OS and agent.
type NodeReservedResources struct {
	Cpu      NodeReservedCpuResources
	Memory   NodeReservedMemoryResources
	Disk     NodeReservedDiskResources
	Networks NodeReservedNetworkResources
}

// NodeReservedNetworkResources are host ports ("22,80-90") never handed
// out on any of the node's addresses (client reserved.reserved_ports).
type NodeReservedNetworkResources struct {
	ReservedHostPorts string
}

// NodeReservedCpuResources is reserved CPU.
type NodeReservedCpuResources struct {
	CpuShares int64
}

// NodeReservedMemoryResources is reserved memory.
type NodeReservedMemoryResources struct {
	MemoryMB int64
}

// NodeReservedDiskResources is reserved disk.
type NodeReservedDiskResources struct {
	DiskMB int64
}

// DimensionMaxAllocs is the exhausted dimension (AllocMetric's
// DimensionExhausted) of a node that holds its NodeMaxAllocs already:
// upstream's words.
const DimensionMaxAllocs = "max allocation exceeded"

// Comparable returns the node's schedulable capacity: offered minus reserved.
func (n *Node) Comparable() *ComparableResources {
	c := &ComparableResources{}
	if n.NodeResources != nil {
		c.CPUShares = n.NodeResources.Cpu.CpuShares
		c.MemoryMB = n.NodeResources.Memory.MemoryMB
		c.DiskMB = n.NodeResources.Disk.DiskMB
	}
	if r := n.ReservedResources; r != nil {
		c.CPUShares -= r.Cpu.CpuShares
		c.MemoryMB -= r.Memory.MemoryMB
		c.DiskMB -= r.Disk.DiskMB
	}
	return c
}

// ComparableResources flattens resources for fit checks and scoring.
type ComparableResources struct {
	CPUShares int64
	MemoryMB  int64
	DiskMB    int64
}

// Add adds o to c.
func (c *ComparableResources) Add(o *ComparableResources) {
	if o == nil {
		return
	}
	c.CPUShares += o.CPUShares
	c.MemoryMB += o.MemoryMB
	c.DiskMB += o.DiskMB
}

// Superset reports whether c covers o, and if not, the first dimension that
// is exhausted ("cpu", "memory", "disk").
func (c *ComparableResources) Superset(o *ComparableResources) (bool, string) {
	switch {
	case c.CPUShares < o.CPUShares:
		return false, "cpu"
	case c.MemoryMB < o.MemoryMB:
		return false, "memory"
	case c.DiskMB < o.DiskMB:
		return false, "disk"
	}
	return true, ""
}
