package agent

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client"
	"github.com/nomad-edge/nomad/nomad/structs"
)

const clientResourcesHCL = `
client {
  enabled           = true
  min_dynamic_port  = 21000
  max_dynamic_port  = 21999
  node_max_allocs   = 12
  cpu_total_compute = 2400
  memory_total_mb   = 1536
  reserved {
    cpu            = 200
    memory         = 128
    disk           = 1024
    reserved_ports = "22,8000-8010"
  }
  gc_interval              = "30s"
  gc_disk_usage_threshold  = 90
  gc_inode_usage_threshold = 85.5
  gc_max_allocs            = 20
  gc_parallel_destroys     = 4
}
`

const clientResourcesJSON = `{"client": {"enabled": true, "min_dynamic_port": 21000, "max_dynamic_port": 21999,
  "node_max_allocs": 12, "cpu_total_compute": 2400, "memory_total_mb": 1536,
  "reserved": {"cpu": 200, "memory": 128, "disk": 1024, "reserved_ports": "22,8000-8010"},
  "gc_interval": "30s", "gc_disk_usage_threshold": 90, "gc_inode_usage_threshold": 85.5,
  "gc_max_allocs": 20, "gc_parallel_destroys": 4}}`

// The client's capacity, port range and garbage-collector keys parse into
// their fields in HCL and JSON alike, and reach the client in its terms:
// keys an operator sets are keys the node honours.
func TestParseConfig_ClientResources(t *testing.T) {
	for name, src := range map[string]string{"agent.hcl": clientResourcesHCL, "agent.json": clientResourcesJSON} {
		t.Run(name, func(t *testing.T) {
			c, err := ParseConfig(name, []byte(src))
			must.NoError(t, err)
			merged := DefaultConfig().Merge(c)
			merged.DataDir = t.TempDir()
			must.NoError(t, merged.Validate())
			cl := merged.Client
			must.Eq(t, &ReservedConfig{CPU: 200, MemoryMB: 128, DiskMB: 1024, ReservedPorts: "22,8000-8010"}, cl.Reserved)

			must.Eq(t, client.NodeResourcesConfig{
				Reserved: &structs.NodeReservedResources{
					Cpu:      structs.NodeReservedCpuResources{CpuShares: 200},
					Memory:   structs.NodeReservedMemoryResources{MemoryMB: 128},
					Disk:     structs.NodeReservedDiskResources{DiskMB: 1024},
					Networks: structs.NodeReservedNetworkResources{ReservedHostPorts: "22,8000-8010"},
				},
				CPUTotalCompute: 2400, MemoryTotalMB: 1536,
				MinDynamicPort: 21000, MaxDynamicPort: 21999, NodeMaxAllocs: 12,
			}, cl.resources())
			must.Eq(t, client.GCConfig{
				Interval: 30 * time.Second, DiskUsageThreshold: 90, InodeUsageThreshold: 85.5,
				MaxAllocs: 20, ParallelDestroys: 4,
			}, cl.gc())
		})
	}
}

// Unset, the keys take upstream's defaults, which /v1/agent/self shows.
func TestDefaultConfig_ClientResources(t *testing.T) {
	cl := DefaultConfig().Client
	must.Nil(t, cl.Reserved)
	must.Eq(t, 20000, cl.MinDynamicPort)
	must.Eq(t, 32000, cl.MaxDynamicPort)
	must.Eq(t, client.GCConfig{Interval: time.Minute, DiskUsageThreshold: 80, InodeUsageThreshold: 70, MaxAllocs: 50, ParallelDestroys: 2}, cl.gc())
}

// Bad values are refused at their position with the key named in full,
// and upstream's reserved.cores, which this version cannot pin, by name.
func TestParseConfig_ClientResourcesBadValues(t *testing.T) {
	src := `
client {
  min_dynamic_port        = 30000
  max_dynamic_port        = 25000
  node_max_allocs         = -1
  gc_disk_usage_threshold = 120
  gc_interval             = "soon"
  gc_parallel_destroys    = 0
  reserved {
    cores          = "0-1"
    reserved_ports = "22,abc"
  }
}
`
	_, err := ParseConfig("agent.hcl", []byte(src))
	must.Error(t, err)
	msg := err.Error()
	for _, want := range []string{
		"agent.hcl:4:29: client.max_dynamic_port (25000) must not be below client.min_dynamic_port (30000)",
		"agent.hcl:5:29: client.node_max_allocs must be a whole number between 0 and",
		"agent.hcl:6:29: client.gc_disk_usage_threshold must be a percentage between 0 and 100, not 120",
		`agent.hcl:7:29: client.gc_interval: invalid duration "soon"`,
		"agent.hcl:8:29: client.gc_parallel_destroys must be a whole number between 1 and 1024",
		"agent.hcl:10:5: client.reserved.cores is not supported by this version; there is no core pinning",
		"agent.hcl:11:22: client.reserved.reserved_ports:",
	} {
		must.StrContains(t, msg, want)
	}
	must.StrNotContains(t, msg, "Unsupported argument")
}

// A dynamic range whose ends come from two files is checked once merged:
// each file alone is fine, together they leave no port.
func TestConfig_ValidateDynamicRangeAcrossFiles(t *testing.T) {
	a, err := ParseConfig("a.hcl", []byte("client {\n  enabled = true\n  min_dynamic_port = 33000\n}\n"))
	must.NoError(t, err)
	c := DefaultConfig().Merge(a)
	c.DataDir = t.TempDir()
	err = c.Validate()
	must.ErrorContains(t, err, "client.min_dynamic_port (33000) must not be above client.max_dynamic_port (32000)")
}
