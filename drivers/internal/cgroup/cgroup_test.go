//go:build linux

package cgroup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shoenig/test/must"
)

// fakeCgroupRoot points the driver at a plain directory laid out like a
// cgroup mount of the given version, so that the limits written for either
// version are checked whatever the host runs.
// testControllers are the exec driver's v1 hierarchies.
var testControllers = []string{"cpu", "memory", "pids"}

func fakeCgroupRoot(t *testing.T, version int) string {
	t.Helper()
	root := t.TempDir()
	old := Root
	Root = root
	t.Cleanup(func() { Root = old })
	if version == 2 {
		must.NoError(t, os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("cpuset cpu io memory pids\n"), 0o644))
		return root
	}
	for _, c := range testControllers {
		must.NoError(t, os.MkdirAll(filepath.Join(root, c), 0o755))
		must.NoError(t, os.WriteFile(filepath.Join(root, c, "cgroup.procs"), nil, 0o644))
	}
	return root
}

func readTrim(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	must.NoError(t, err)
	return strings.TrimSpace(string(b))
}

// On cgroup v2 the task's one cgroup under nomad.slice gets memory.max from
// memory_max, memory.low from memory, no swap, cpu.weight from the shares
// and pids.max; the parents pass the controllers down.
func TestCgroups_V2Limits(t *testing.T) {
	root := fakeCgroupRoot(t, 2)
	v, reason := Detect(testControllers)
	must.Eq(t, 2, v, must.Sprint(reason))
	cg, err := Create(CreateInput{Version: 2, Name: "a1.web", Limits: Limits{CPUShares: 1024, MemSoftMB: 64, MemHardMB: 128, Pids: 20}})
	must.NoError(t, err)
	dir := filepath.Join(root, "nomad.slice", "a1.web")
	must.Eq(t, []string{dir}, cg.Paths)
	must.True(t, cg.Valid())
	must.Eq(t, "+cpu +memory +pids", readTrim(t, filepath.Join(root, "cgroup.subtree_control")))
	must.Eq(t, "+cpu +memory +pids", readTrim(t, filepath.Join(root, "nomad.slice", "cgroup.subtree_control")))
	for file, want := range map[string]string{
		"memory.max":      "134217728",
		"memory.low":      "67108864",
		"memory.swap.max": "0",
		"cpu.weight":      "39",
		"pids.max":        "20",
	} {
		must.Eq(t, want, readTrim(t, filepath.Join(dir, file)), must.Sprint(file))
	}

	// The OOM kill is read from memory.events.
	must.False(t, cg.OOMKilled())
	must.NoError(t, os.WriteFile(filepath.Join(dir, "memory.events"), []byte("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n"), 0o644))
	must.True(t, cg.OOMKilled())
}

// Without memory_max, memory is the hard limit and there is no soft one.
func TestCgroups_V1MemoryOnly(t *testing.T) {
	root := fakeCgroupRoot(t, 1)
	v, _ := Detect(testControllers)
	must.Eq(t, 1, v)
	cg, err := Create(CreateInput{Version: 1, Name: "a1.web", Controllers: testControllers, Limits: Limits{MemSoftMB: 64, MemHardMB: 64}})
	must.NoError(t, err)
	mem := filepath.Join(root, "memory", "nomad", "a1.web")
	must.Eq(t, mem, cg.Dir("memory"))
	must.Eq(t, "67108864", readTrim(t, filepath.Join(mem, "memory.limit_in_bytes")))
	_, err = os.Stat(filepath.Join(mem, "memory.soft_limit_in_bytes"))
	must.True(t, os.IsNotExist(err), must.Sprint("no soft limit below the hard one"))
	_, err = os.Stat(filepath.Join(root, "cpu", "nomad", "a1.web", "cpu.shares"))
	must.True(t, os.IsNotExist(err), must.Sprint("no cpu asked, none set"))
}

// cpu.weight covers the shares' range end to end.
func TestSharesToWeight(t *testing.T) {
	must.Eq(t, 1, SharesToWeight(0))
	must.Eq(t, 1, SharesToWeight(2))
	must.Eq(t, 39, SharesToWeight(1024))
	must.Eq(t, 10000, SharesToWeight(262144))
	must.Eq(t, 10000, SharesToWeight(1<<30))
}

// A host without the controllers is named as the reason.
func TestDetect_Missing(t *testing.T) {
	root := t.TempDir()
	old := Root
	Root = root
	t.Cleanup(func() { Root = old })
	v, reason := Detect(testControllers)
	must.Eq(t, 0, v)
	must.StrContains(t, reason, `cgroup v1 controller "cpu" is not mounted`)

	must.NoError(t, os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("cpu io\n"), 0o644))
	v, reason = Detect(testControllers)
	must.Eq(t, 0, v)
	must.StrContains(t, reason, `cgroup v2 controller "memory" is not available`)
}
