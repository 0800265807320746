//go:build linux

package rawexec

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/internal/drivertest"
)

// BenchmarkRawExec_100Tasks starts 100 tasks with the driver, one after
// the other, as the agent would, with a cgroup each (where the host has
// them and the benchmark runs as root) and without. It reports the mean
// start latency and what the 100 running tasks cost the agent's Go memory.
func BenchmarkRawExec_100Tasks(b *testing.B) {
	for _, mode := range []string{"cgroup", "no-cgroup"} {
		b.Run(mode, func(b *testing.B) {
			if mode == "cgroup" && detectCgroupHost().version == 0 {
				b.Skip("the host offers no cgroups (or this is not root)")
			}
			seq := 0
			drivertest.BenchStarts(b, 100, func() drivers.Driver {
				d, err := New(drivers.Options{Config: map[string]any{"enabled": true}})
				must.NoError(b, err)
				if mode == "no-cgroup" {
					d.cgroupHost = func() cgroupHost { return cgroupHost{} }
				}
				return d
			}, func() *drivers.TaskConfig {
				seq++
				return &drivers.TaskConfig{
					ID:      fmt.Sprintf("bench%d-%d/web", os.Getpid(), seq),
					Name:    "web",
					TaskDir: filepath.Join(b.TempDir(), "web"),
					Config:  map[string]any{"command": "/bin/sleep", "args": []any{"300"}},
				}
			})
		})
	}
}
