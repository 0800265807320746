//go:build linux

package exec

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/internal/drivertest"
)

// BenchmarkExec_100Tasks starts 100 isolated tasks with the driver, as the
// agent would, one after the other: each start is namespaces, cgroups, the
// bind mounts and the exec of the command. It reports the mean start
// latency and what the 100 running tasks cost the agent's resident memory
// (the test binary stands in for the agent); the tasks' own memory and the
// kernel's are not the agent's.
func BenchmarkExec_100Tasks(b *testing.B) {
	if v, reason := checkHost(); v == 0 {
		b.Skipf("needs a host that can isolate tasks: %s", reason)
	}
	drivertest.BenchStarts(b, 100, func() drivers.Driver {
		d, err := New(drivers.Options{})
		must.NoError(b, err)
		return d
	}, func() *drivers.TaskConfig { return benchTaskConfig(b) })
}

func benchTaskConfig(b *testing.B) *drivers.TaskConfig {
	b.Helper()
	dir := b.TempDir()
	must.NoError(b, os.Chmod(dir, 0o755))
	task := filepath.Join(dir, "web")
	must.NoError(b, os.MkdirAll(filepath.Join(task, "local"), 0o755))
	id := fmt.Sprintf("bench%d-%d", os.Getpid(), taskSeq.Add(1))
	return &drivers.TaskConfig{
		ID:      id + "/web",
		Name:    "web",
		AllocID: id,
		TaskDir: task,
		Config:  map[string]any{"command": "/bin/sleep", "args": []any{"300"}},
	}
}
