package api

// Default task resources, applied by Resources.Canonicalize. They match
// upstream's, so a job that sets no resources asks for the same amount here
// as there.
const (
	DefaultCPU      = 100
	DefaultMemoryMB = 300
)

// Resources is what a task asks for. Every field is a pointer: an unset CPU
// and an explicit `cpu = 0` (meaningful when cores are reserved) differ.
type Resources struct {
	CPU         *int
	Cores       *int
	MemoryMB    *int
	MemoryMaxMB *int
	DiskMB      *int
}

// Canonicalize fills in the defaults. CPU shares and reserved cores are
// alternatives: when cores are requested and no CPU is given, CPU is 0
// rather than the default, because the cores already imply the shares.
func (r *Resources) Canonicalize() {
	if r.Cores == nil {
		r.Cores = new(0)
		if r.CPU == nil {
			r.CPU = new(DefaultCPU)
		}
	}
	if r.CPU == nil {
		r.CPU = new(0)
	}
	if r.MemoryMB == nil {
		r.MemoryMB = new(DefaultMemoryMB)
	}
}

// AllocatedResources is what the scheduler granted an allocation. Only the
// parts our scheduler computes are modelled; upstream's network and device
// fields are absent.
type AllocatedResources struct {
	Tasks  map[string]*AllocatedTaskResources
	Shared AllocatedSharedResources
}

// AllocatedTaskResources is one task's share of an allocation.
type AllocatedTaskResources struct {
	Cpu    AllocatedCpuResources
	Memory AllocatedMemoryResources
}

// AllocatedSharedResources is what the tasks of an allocation share.
type AllocatedSharedResources struct {
	DiskMB int64
}

// AllocatedCpuResources is a task's CPU grant.
type AllocatedCpuResources struct {
	CpuShares     int64
	ReservedCores []uint16
}

// AllocatedMemoryResources is a task's memory grant; MemoryMaxMB is the
// oversubscription ceiling (0 when not oversubscribed).
type AllocatedMemoryResources struct {
	MemoryMB    int64
	MemoryMaxMB int64
}
