package api

// MemoryStats is a task's memory, in bytes (upstream's MemoryStats).
// Measured names the fields the driver could measure.
type MemoryStats struct {
	RSS            uint64
	Cache          uint64
	Swap           uint64
	MappedFile     uint64
	Usage          uint64
	MaxUsage       uint64
	KernelUsage    uint64
	KernelMaxUsage uint64
	Measured       []string
}

// CpuStats is a task's CPU use: percentages of one core, TotalTicks in MHz
// (upstream's CpuStats).
type CpuStats struct {
	SystemMode       float64
	UserMode         float64
	TotalTicks       float64
	ThrottledPeriods uint64
	ThrottledTime    uint64
	Percent          float64
	Measured         []string
}

// ResourceUsage is one sample of memory and CPU.
type ResourceUsage struct {
	MemoryStats *MemoryStats
	CpuStats    *CpuStats
}

// TaskResourceUsage is one task's sample, and its processes' by pid.
type TaskResourceUsage struct {
	ResourceUsage *ResourceUsage
	Timestamp     int64
	Pids          map[string]*ResourceUsage
}

// AllocResourceUsage is an allocation's sample: the sum and each task's.
type AllocResourceUsage struct {
	ResourceUsage *ResourceUsage
	Tasks         map[string]*TaskResourceUsage
	Timestamp     int64
}

// Stats samples the allocation's resource usage on its client
// (GET /v1/client/allocation/:id/stats).
func (a *Allocations) Stats(alloc *Allocation, q *QueryOptions) (*AllocResourceUsage, error) {
	var resp AllocResourceUsage
	if _, err := a.client.query("/v1/client/allocation/"+pathID(alloc.ID)+"/stats", &resp, q); err != nil {
		return nil, err
	}
	return &resp, nil
}
