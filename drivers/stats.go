package drivers

// StatsReporter is implemented by drivers that can tell what a running task
// uses (`nomad alloc status -stats`, /v1/client/allocation/:id/stats).
type StatsReporter interface {
	// TaskStats samples the task's CPU and memory now. A task the driver
	// does not track is ErrTaskNotFound.
	TaskStats(taskID string) (*TaskResourceUsage, error)
}

// Names of the measurements in MemoryStats.Measured and CpuStats.Measured,
// as upstream spells them: a reader tells a zero from a value the driver
// could not measure by them.
const (
	MeasuredRSS            = "RSS"
	MeasuredCache          = "Cache"
	MeasuredSwap           = "Swap"
	MeasuredMappedFile     = "Mapped File"
	MeasuredUsage          = "Usage"
	MeasuredMaxUsage       = "Max Usage"
	MeasuredKernelUsage    = "Kernel Usage"
	MeasuredKernelMaxUsage = "Kernel Max Usage"

	MeasuredSystemMode       = "System Mode"
	MeasuredUserMode         = "User Mode"
	MeasuredThrottledPeriods = "Throttled Periods"
	MeasuredThrottledTime    = "Throttled Time"
	MeasuredPercent          = "Percent"
)

// MemoryStats is a task's memory, in bytes, with upstream's field names.
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

// CpuStats is a task's CPU use, with upstream's field names: SystemMode and
// UserMode are percentages of one core over the sampling interval, as is
// Percent (their sum, so a task busy on two cores shows 200). TotalTicks is
// Percent in MHz of the node's cores; the client fills it, the driver does
// not know the clock rate. ThrottledTime is in nanoseconds.
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

// TaskResourceUsage is one sample of a task: the whole task, and each of its
// processes where the driver sees them (keyed by pid).
type TaskResourceUsage struct {
	ResourceUsage *ResourceUsage
	// Timestamp is when the sample was taken, in Unix nanoseconds.
	Timestamp int64
	Pids      map[string]*ResourceUsage
}

// NewResourceUsage returns an empty sample whose fields are all non-nil.
func NewResourceUsage() *ResourceUsage {
	return &ResourceUsage{MemoryStats: &MemoryStats{}, CpuStats: &CpuStats{}}
}

// Add adds u's figures into r; Measured stays r's.
func (r *ResourceUsage) Add(u *ResourceUsage) {
	if u == nil {
		return
	}
	if m := u.MemoryStats; m != nil {
		r.MemoryStats.RSS += m.RSS
		r.MemoryStats.Cache += m.Cache
		r.MemoryStats.Swap += m.Swap
		r.MemoryStats.MappedFile += m.MappedFile
		r.MemoryStats.Usage += m.Usage
		r.MemoryStats.MaxUsage += m.MaxUsage
		r.MemoryStats.KernelUsage += m.KernelUsage
		r.MemoryStats.KernelMaxUsage += m.KernelMaxUsage
	}
	if c := u.CpuStats; c != nil {
		r.CpuStats.SystemMode += c.SystemMode
		r.CpuStats.UserMode += c.UserMode
		r.CpuStats.TotalTicks += c.TotalTicks
		r.CpuStats.ThrottledPeriods += c.ThrottledPeriods
		r.CpuStats.ThrottledTime += c.ThrottledTime
		r.CpuStats.Percent += c.Percent
	}
}
