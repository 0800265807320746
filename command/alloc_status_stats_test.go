package command

import (
	"regexp"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// alloc status -stats shows what a running raw_exec task uses against what
// it reserved, and the figures its driver measured; a mock_driver task,
// which measures nothing, says so.
func TestAllocStatus_Stats(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	code, out, errOut := run(t, a, jobRun, writeJob(t, "busy", "raw_exec",
		`command = "/bin/sh"
        args = ["-c", "while :; do :; done"]`))
	must.Eq(t, 0, code, must.Sprint(out, errOut))
	alloc := waitRunning(t, a, "busy", 1)[0]

	code, out, errOut = run(t, a, allocStatus, "-stats", alloc.ID)
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.RegexMatch(t, regexp.MustCompile(`\d+/100 MHz\s+[0-9.]+ [KMG]?i?B/64 MiB`), out)
	for _, want := range []string{"Memory Stats", "RSS", "CPU Stats", "Percent", "User Mode"} {
		must.StrContains(t, out, want)
	}

	code, out, errOut = run(t, a, jobRun, writeJob(t, "mock", "mock_driver", `run_for = "5m"`))
	must.Eq(t, 0, code, must.Sprint(out, errOut))
	mock := waitRunning(t, a, "mock", 1)[0]
	code, out, _ = run(t, a, allocStatus, "-stats", mock.ID)
	must.Eq(t, 0, code)
	must.StrContains(t, out, "Resource usage is not available for this task.")
	must.StrContains(t, out, "100 MHz  64 MiB", must.Sprint("reserved only: nothing was measured"))
}

// The tables list only what the driver measured, in a stable order.
func TestFormatUsage(t *testing.T) {
	u := &api.ResourceUsage{
		MemoryStats: &api.MemoryStats{RSS: 3 << 20, Usage: 5 << 20, Measured: []string{"Usage", "RSS"}},
		CpuStats:    &api.CpuStats{Percent: 12.5, UserMode: 10, SystemMode: 2.5, Measured: []string{"User Mode", "System Mode", "Percent"}},
	}
	out := formatUsage(u)
	must.StrContains(t, out, "Memory Stats\nRSS      Usage\n3.0 MiB  5.0 MiB")
	must.StrContains(t, out, "CPU Stats\nPercent  System Mode  User Mode\n12.50%   2.50%        10.00%")
	must.StrNotContains(t, out, "Swap")
	must.Eq(t, "512 B", formatBytes(512))
	must.Eq(t, "1.5 GiB", formatBytes(3<<29))
}
