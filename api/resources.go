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
// parts our scheduler computes are modelled: upstream's device fields and
// per-network details are absent; host ports are in Shared.Ports.
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
	Ports  []PortMapping `json:",omitempty"`
}

// NetworkResource is a group's `network` block: its mode, ports, DNS and
// host name.
type NetworkResource struct {
	Mode          string     `json:",omitempty"`
	ReservedPorts []Port     `json:",omitempty"`
	DynamicPorts  []Port     `json:",omitempty"`
	DNS           *DNSConfig `json:",omitempty"`
	Hostname      string     `json:",omitempty"`
}

// DNSConfig is a network's `dns { servers searches options }`.
type DNSConfig struct {
	Servers  []string `json:",omitempty"`
	Searches []string `json:",omitempty"`
	Options  []string `json:",omitempty"`
}

// Port is one `port "<label>" { static to }`: Value is the static host
// port, zero for one the scheduler picks.
type Port struct {
	Label       string
	Value       int    `json:",omitempty"`
	To          int    `json:",omitempty"`
	HostNetwork string `json:",omitempty"`
}

// PortMapping is a host port the scheduler gave an allocation.
type PortMapping struct {
	Label  string
	Value  int
	To     int
	HostIP string
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
