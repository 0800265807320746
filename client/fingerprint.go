package client

import (
	"bufio"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// Fallbacks when the host does not say.
const (
	// fallbackMHzPerCore is assumed when /proc/cpuinfo has no frequency
	// (some ARM boards, some VMs), so that the node still offers CPU.
	fallbackMHzPerCore = 1000

	reservedCPUShares = 100
	reservedMemoryMB  = 256
	// A node smaller than this keeps everything for its workloads: a
	// reservation would take too big a share of it.
	reserveCPUAbove    = 1000
	reserveMemoryAbove = 1024
)

// hostSources are the files fingerprinting reads; tests point them at
// fixtures.
type hostSources struct {
	cpuInfo   string
	memInfo   string
	osRelease string
	mounts    string
}

var defaultHostSources = hostSources{
	cpuInfo:   "/proc/cpuinfo",
	memInfo:   "/proc/meminfo",
	osRelease: "/etc/os-release",
	mounts:    "/proc/mounts",
}

// fingerprintHost fills the node's attributes and resources from the host.
// Each probe that fails leaves its attributes out rather than failing the
// client: a node with less information can still run work.
func fingerprintHost(node *structs.Node, src hostSources, allocDir string) {
	attrs := node.Attributes
	res := node.NodeResources

	attrs["cpu.arch"] = runtime.GOARCH
	attrs["kernel.name"] = runtime.GOOS
	var uts unix.Utsname
	if err := unix.Uname(&uts); err == nil {
		attrs["kernel.version"] = unix.ByteSliceToString(uts.Release[:])
	}
	if f, err := os.Open(src.osRelease); err == nil {
		name, version := parseOSRelease(f)
		_ = f.Close()
		if name != "" {
			attrs["os.name"] = name
		}
		if version != "" {
			attrs["os.version"] = version
		}
	}
	if h, err := os.Hostname(); err == nil {
		attrs["unique.hostname"] = h
	}

	cores, mhz, model := runtime.NumCPU(), 0.0, ""
	if f, err := os.Open(src.cpuInfo); err == nil {
		var n int
		n, mhz, model = parseCPUInfo(f)
		_ = f.Close()
		if n > 0 {
			cores = n
		}
	}
	if mhz <= 0 {
		mhz = fallbackMHzPerCore
	}
	total := int64(float64(cores) * mhz)
	res.Cpu = structs.NodeCpuResources{CpuShares: total, TotalCpuCores: uint16(cores)}
	attrs["cpu.numcores"] = strconv.Itoa(cores)
	attrs["cpu.frequency"] = strconv.Itoa(int(mhz))
	attrs["cpu.totalcompute"] = strconv.FormatInt(total, 10)
	if model != "" {
		attrs["cpu.modelname"] = model
	}

	if f, err := os.Open(src.memInfo); err == nil {
		if kb := parseMemTotalKB(f); kb > 0 {
			res.Memory.MemoryMB = kb / 1024
			attrs["memory.totalbytes"] = strconv.FormatInt(kb*1024, 10)
		}
		_ = f.Close()
	}

	if err := os.MkdirAll(allocDir, 0o755); err == nil {
		var st unix.Statfs_t
		if err := unix.Statfs(allocDir, &st); err == nil {
			free := int64(st.Bavail) * int64(st.Bsize)
			size := int64(st.Blocks) * int64(st.Bsize)
			res.Disk.DiskMB = free / (1 << 20)
			attrs["unique.storage.bytesfree"] = strconv.FormatInt(free, 10)
			attrs["unique.storage.bytestotal"] = strconv.FormatInt(size, 10)
		}
		if f, err := os.Open(src.mounts); err == nil {
			if dev := mountDevice(f, allocDir); dev != "" {
				attrs["unique.storage.volume"] = dev
			}
			_ = f.Close()
		}
	}

	node.ReservedResources = reserve(res)
}

// reserve holds back a little CPU and memory for the OS and the agent on
// machines big enough to spare it.
func reserve(res *structs.NodeResources) *structs.NodeReservedResources {
	r := &structs.NodeReservedResources{}
	if res.Cpu.CpuShares > reserveCPUAbove {
		r.Cpu.CpuShares = reservedCPUShares
	}
	if res.Memory.MemoryMB > reserveMemoryAbove {
		r.Memory.MemoryMB = reservedMemoryMB
	}
	return r
}

// parseCPUInfo reads /proc/cpuinfo: the number of logical processors, the
// highest frequency among them (cores of big.LITTLE parts differ) and the
// model name.
func parseCPUInfo(r io.Reader) (cores int, mhz float64, model string) {
	s := bufio.NewScanner(r)
	for s.Scan() {
		key, val, ok := strings.Cut(s.Text(), ":")
		if !ok {
			continue
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		switch key {
		case "processor":
			cores++
		case "cpu MHz":
			if f, err := strconv.ParseFloat(val, 64); err == nil && f > mhz {
				mhz = f
			}
		case "model name":
			if model == "" {
				model = val
			}
		}
	}
	return cores, mhz, model
}

// parseMemTotalKB returns MemTotal from /proc/meminfo, in kB.
func parseMemTotalKB(r io.Reader) int64 {
	s := bufio.NewScanner(r)
	for s.Scan() {
		rest, ok := strings.CutPrefix(s.Text(), "MemTotal:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return 0
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0
		}
		return kb
	}
	return 0
}

// parseOSRelease returns ID and VERSION_ID from an os-release file.
func parseOSRelease(r io.Reader) (name, version string) {
	s := bufio.NewScanner(r)
	for s.Scan() {
		key, val, ok := strings.Cut(s.Text(), "=")
		if !ok {
			continue
		}
		val = strings.Trim(val, `"'`)
		switch key {
		case "ID":
			name = val
		case "VERSION_ID":
			version = val
		}
	}
	return name, version
}

// mountDevice returns the device of the mount holding path.
func mountDevice(r io.Reader, path string) string {
	dev, _ := mountOf(r, path)
	return dev
}

// mountOf returns the device and mount point of the mount holding path:
// the entry of /proc/mounts with the longest mount point that is a prefix
// of path.
func mountOf(r io.Reader, path string) (dev, mountpoint string) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", ""
	}
	if resolved, err := filepath.EvalSymlinks(abs); err == nil {
		abs = resolved
	}
	best := -1
	s := bufio.NewScanner(r)
	for s.Scan() {
		f := strings.Fields(s.Text())
		if len(f) < 2 {
			continue
		}
		mp := f[1]
		if mp != "/" && abs != mp && !strings.HasPrefix(abs, mp+"/") {
			continue
		}
		if len(mp) > best {
			best, dev, mountpoint = len(mp), f[0], mp
		}
	}
	return dev, mountpoint
}

// applyDriverFingerprint records one driver's fingerprint on the node and
// reports whether anything the scheduler sees changed. Undetected drivers
// are left out: the scheduler must not consider them.
func applyDriverFingerprint(node *structs.Node, name string, fp *drivers.Fingerprint, now time.Time) bool {
	attr := "driver." + name
	prev := node.Drivers[name]
	if fp == nil || !fp.Detected {
		changed := prev != nil
		delete(node.Drivers, name)
		delete(node.Attributes, attr)
		return changed
	}
	info := &structs.DriverInfo{
		Attributes:        maps.Clone(fp.Attributes),
		Detected:          true,
		Healthy:           fp.Healthy,
		HealthDescription: fp.HealthDescription,
		UpdateTime:        now,
	}
	changed := prev == nil || prev.Healthy != info.Healthy ||
		prev.HealthDescription != info.HealthDescription || !maps.Equal(prev.Attributes, info.Attributes)
	if !changed {
		info.UpdateTime = prev.UpdateTime
	}
	node.Drivers[name] = info
	if fp.Healthy {
		maps.Copy(node.Attributes, fp.Attributes)
		node.Attributes[attr] = "1"
	} else {
		for k := range fp.Attributes {
			delete(node.Attributes, k)
		}
		delete(node.Attributes, attr)
	}
	return changed
}
