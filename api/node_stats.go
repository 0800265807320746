package api

import "net/url"

// HostStats is a node's host as its client reads it (GET
// /v1/client/stats): memory in bytes, each CPU's use in percent, disks,
// uptime in seconds.
type HostStats struct {
	Memory           *HostMemoryStats
	CPU              []*HostCPUStats
	DiskStats        []*HostDiskStats
	AllocDirStats    *HostDiskStats
	Uptime           uint64
	Timestamp        int64
	CPUTicksConsumed float64
}

// HostMemoryStats is the host's memory, in bytes.
type HostMemoryStats struct {
	Total     uint64
	Available uint64
	Used      uint64
	Free      uint64
}

// HostCPUStats is one CPU's use, in percent.
type HostCPUStats struct {
	CPU    string
	User   float64
	System float64
	Idle   float64
}

// HostDiskStats is one file system's size and use.
type HostDiskStats struct {
	Device            string
	Mountpoint        string
	Size              uint64
	Used              uint64
	Available         uint64
	UsedPercent       float64
	InodesUsedPercent float64
}

// Stats returns a node's host stats; an empty nodeID reads the node of
// the agent asked.
func (n *Nodes) Stats(nodeID string, q *QueryOptions) (*HostStats, error) {
	var out HostStats
	path := "/v1/client/stats"
	if nodeID != "" {
		path += "?node_id=" + url.QueryEscape(nodeID)
	}
	if _, err := n.client.query(path, &out, q); err != nil {
		return nil, err
	}
	return &out, nil
}
