//go:build linux

package cgroup

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/drivers"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	must.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	must.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

// On v1 the figures come from the memory, cpuacct and cpu hierarchies, and
// only what the kernel offered is listed as measured.
func TestUsage_V1(t *testing.T) {
	root := fakeCgroupRoot(t, 1)
	cg := For(1, "a1.web", []string{"cpu", "cpuacct", "memory"})
	mem, acct, cpu := cg.Dir("memory"), cg.Dir("cpuacct"), cg.Dir("cpu")
	must.Eq(t, filepath.Join(root, "cpuacct", ParentV1, "a1.web"), acct)
	write(t, filepath.Join(mem, "memory.stat"), "cache 100\nrss 200\nswap 0\nmapped_file 50\npgfault 9\n")
	write(t, filepath.Join(mem, "memory.usage_in_bytes"), "400\n")
	write(t, filepath.Join(mem, "memory.max_usage_in_bytes"), "500\n")
	write(t, filepath.Join(acct, "cpuacct.usage"), "3000000000\n")
	write(t, filepath.Join(acct, "cpuacct.stat"), "user 200\nsystem 100\n")
	write(t, filepath.Join(cpu, "cpu.stat"), "nr_periods 10\nnr_throttled 2\nthrottled_time 7000\n")

	u := cg.Usage()
	must.Eq(t, drivers.MemoryStats{RSS: 200, Cache: 100, MappedFile: 50, Usage: 400, MaxUsage: 500,
		Measured: []string{"RSS", "Cache", "Swap", "Mapped File", "Usage", "Max Usage"}}, u.Memory)
	must.Eq(t, CPUTime{User: 2e9, System: 1e9, Total: 3e9}, u.CPU)
	must.Eq(t, uint64(2), u.ThrottledPeriods)
	must.Eq(t, uint64(7000), u.ThrottledTime)
	must.Eq(t, []string{"System Mode", "User Mode", "Throttled Periods", "Throttled Time", "Percent"}, u.MeasuredCPU)
}

// On v2 the one directory has it all; anonymous memory stands for RSS and
// microseconds become nanoseconds.
func TestUsage_V2(t *testing.T) {
	fakeCgroupRoot(t, 2)
	cg, err := Create(CreateInput{Version: 2, Name: "a1.web"})
	must.NoError(t, err)
	dir := cg.Dir("")
	write(t, filepath.Join(dir, "memory.current"), "4096\n")
	write(t, filepath.Join(dir, "memory.stat"), "anon 1024\nfile 2048\nfile_mapped 512\nkernel 256\n")
	write(t, filepath.Join(dir, "cpu.stat"), "usage_usec 30\nuser_usec 20\nsystem_usec 10\nnr_throttled 1\nthrottled_usec 5\n")

	u := cg.Usage()
	must.Eq(t, uint64(1024), u.Memory.RSS)
	must.Eq(t, uint64(2048), u.Memory.Cache)
	must.Eq(t, uint64(4096), u.Memory.Usage)
	must.Eq(t, uint64(256), u.Memory.KernelUsage)
	must.SliceNotContains(t, u.Memory.Measured, "Max Usage")
	must.Eq(t, CPUTime{User: 20000, System: 10000, Total: 30000}, u.CPU)
	must.Eq(t, uint64(5000), u.ThrottledTime)
}

// A cgroup_v2_override names an existing cgroup below the root; the task
// joins it but never kills or removes it.
func TestSharedV2(t *testing.T) {
	root := fakeCgroupRoot(t, 2)
	write(t, filepath.Join(root, "custom", "app", "cgroup.procs"), "")
	cg, err := SharedV2("custom/app")
	must.NoError(t, err)
	must.Eq(t, []string{filepath.Join(root, "custom", "app")}, cg.Paths)
	must.True(t, cg.Shared)
	must.True(t, cg.Valid())
	must.NoError(t, cg.Destroy())
	_, err = os.Stat(cg.Paths[0])
	must.NoError(t, err)

	_, err = SharedV2("/etc")
	must.ErrorContains(t, err, "is not below")
	_, err = SharedV2("missing")
	must.Error(t, err)
}
