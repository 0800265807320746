package structs

// HostStats is a client's view of its host, as /v1/client/stats answers
// (upstream's shape and field names): memory in bytes, each CPU's use in
// percent, the allocation directory's disk, uptime in seconds.
type HostStats struct {
	Memory           *HostMemoryStats
	CPU              []*HostCPUStats
	DiskStats        []*HostDiskStats
	AllocDirStats    *HostDiskStats
	DeviceStats      []any
	Uptime           uint64
	Timestamp        int64 // Unix nanoseconds
	CPUTicksConsumed float64
}

// HostMemoryStats is the host's memory, in bytes.
type HostMemoryStats struct {
	Total     uint64
	Available uint64
	Used      uint64
	Free      uint64
}

// HostCPUStats is one CPU's use since the previous reading, in percent.
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
