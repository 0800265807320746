package client

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/clienttest"
	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

const cpuinfoFixture = `processor	: 0
model name	: ARM Cortex-A72
cpu MHz		: 1500.000

processor	: 1
model name	: ARM Cortex-A72
cpu MHz		: 1800.000
`

// TestParseHostFiles checks the /proc and /etc parsers against fixtures of
// the shapes found on edge boards.
func TestParseHostFiles(t *testing.T) {
	cores, mhz, model := parseCPUInfo(strings.NewReader(cpuinfoFixture))
	must.Eq(t, 2, cores)
	must.Eq(t, 1800.0, mhz)
	must.Eq(t, "ARM Cortex-A72", model)

	cores, mhz, _ = parseCPUInfo(strings.NewReader("processor : 0\nprocessor : 1\nprocessor : 2\n"))
	must.Eq(t, 3, cores)
	must.Eq(t, 0.0, mhz)

	must.Eq(t, int64(8048576), parseMemTotalKB(strings.NewReader("MemTotal:        8048576 kB\nMemFree: 1 kB\n")))
	must.Eq(t, int64(0), parseMemTotalKB(strings.NewReader("garbage")))

	name, version := parseOSRelease(strings.NewReader("NAME=\"Alpine Linux\"\nID=alpine\nVERSION_ID=3.19.1\n"))
	must.Eq(t, "alpine", name)
	must.Eq(t, "3.19.1", version)

	mounts := "/dev/root / ext4 rw 0 0\n/dev/mmcblk0p3 /var/lib/nomad ext4 rw 0 0\n/dev/sda1 /var/lib/nomadx ext4 rw 0 0\n"
	must.Eq(t, "/dev/mmcblk0p3", mountDevice(strings.NewReader(mounts), "/var/lib/nomad/alloc"))
	must.Eq(t, "/dev/root", mountDevice(strings.NewReader(mounts), "/opt"))
}

// TestFingerprintHost checks that fingerprinting from fixtures fills the
// node the scheduler needs, falls back to 1000 MHz per core when the
// frequency is missing, and reserves only on machines big enough.
func TestFingerprintHost(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		must.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	src := hostSources{
		cpuInfo:   write("cpuinfo", "processor : 0\nprocessor : 1\n"),
		memInfo:   write("meminfo", "MemTotal: 4194304 kB\n"),
		osRelease: write("os-release", "ID=debian\nVERSION_ID=\"12\"\n"),
		mounts:    write("mounts", "/dev/vda1 / ext4 rw 0 0\n"),
	}
	node := &structs.Node{Attributes: map[string]string{}, NodeResources: &structs.NodeResources{}}
	fingerprintHost(node, src, filepath.Join(dir, "alloc"))

	must.Eq(t, int64(2000), node.NodeResources.Cpu.CpuShares)
	must.Eq(t, uint16(2), node.NodeResources.Cpu.TotalCpuCores)
	must.Eq(t, int64(4096), node.NodeResources.Memory.MemoryMB)
	must.Positive(t, node.NodeResources.Disk.DiskMB)
	must.Eq(t, "debian", node.Attributes["os.name"])
	must.Eq(t, "12", node.Attributes["os.version"])
	must.Eq(t, "/dev/vda1", node.Attributes["unique.storage.volume"])
	must.Eq(t, "2000", node.Attributes["cpu.totalcompute"])
	for _, k := range []string{"kernel.name", "cpu.arch", "unique.hostname", "memory.totalbytes", "unique.storage.bytesfree"} {
		must.MapContainsKey(t, node.Attributes, k)
	}
	must.Eq(t, int64(100), node.ReservedResources.Cpu.CpuShares)
	must.Eq(t, int64(256), node.ReservedResources.Memory.MemoryMB)

	small := reserve(&structs.NodeResources{Cpu: structs.NodeCpuResources{CpuShares: 1000}, Memory: structs.NodeMemoryResources{MemoryMB: 512}})
	must.Eq(t, structs.NodeReservedResources{}, *small)
}

// TestApplyDriverFingerprint checks how driver health reaches the node: a
// healthy driver is advertised with its attribute, a disabled one is
// visible but not selectable, an undetected one is absent.
func TestApplyDriverFingerprint(t *testing.T) {
	node := &structs.Node{Attributes: map[string]string{}, Drivers: map[string]*structs.DriverInfo{}}
	now := time.Unix(1_700_000_000, 0)
	healthy := &drivers.Fingerprint{Detected: true, Healthy: true, HealthDescription: "healthy",
		Attributes: map[string]string{"driver.raw_exec": "1"}}

	must.True(t, applyDriverFingerprint(node, "raw_exec", healthy, now))
	must.Eq(t, "1", node.Attributes["driver.raw_exec"])
	must.True(t, node.Drivers["raw_exec"].Healthy)
	must.False(t, applyDriverFingerprint(node, "raw_exec", healthy, now.Add(time.Minute)))
	must.Eq(t, now, node.Drivers["raw_exec"].UpdateTime)

	disabled := &drivers.Fingerprint{Detected: true, HealthDescription: "disabled"}
	must.True(t, applyDriverFingerprint(node, "raw_exec", disabled, now))
	must.MapNotContainsKey(t, node.Attributes, "driver.raw_exec")
	must.False(t, node.Drivers["raw_exec"].Healthy)

	must.True(t, applyDriverFingerprint(node, "raw_exec", &drivers.Fingerprint{}, now))
	must.MapNotContainsKey(t, node.Drivers, "raw_exec")
}

// slowProbeDriver is the mock driver whose probes after the first hang
// until release is closed, as a docker daemon that stopped answering does.
type slowProbeDriver struct {
	drivers.Driver
	probed  bool
	release chan struct{}
}

func (d *slowProbeDriver) Fingerprint() *drivers.Fingerprint {
	if d.probed {
		<-d.release
	}
	d.probed = true
	return d.Driver.Fingerprint()
}

// TestClient_SlowDriverProbeDoesNotHoldTheNode checks that a driver probe
// that hangs holds no lock on the node: the heartbeat reads the node's
// secret on every beat, and a client whose heartbeat waited on a stuck
// driver would be marked down by the servers for a driver it may not even
// use.
func TestClient_SlowDriverProbeDoesNotHoldTheNode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := clienttest.NewFakeServer()
		defer srv.Close()
		release := make(chan struct{})
		cat := drivers.NewCatalog()
		must.NoError(t, cat.Register(mock.Name, func(o drivers.Options) (drivers.Driver, error) {
			d, err := mock.Factory(o)
			return &slowProbeDriver{Driver: d, release: release}, err
		}))
		c := newTestClient(t, srv, testClientOpts{drivers: cat})
		defer c.Destroy()
		defer close(release)
		waitReady(t, c)

		time.Sleep(driverFingerprintInterval)
		synctest.Wait() // the periodic probe now hangs
		must.True(t, c.nodeMu.TryRLock(), must.Sprint("the node is locked while a driver is probed"))
		c.nodeMu.RUnlock()

		before := len(srv.Heartbeats(c.NodeID()))
		time.Sleep(clienttest.DefaultHeartbeatTTL)
		synctest.Wait()
		must.Greater(t, before, len(srv.Heartbeats(c.NodeID())))
	})
}
