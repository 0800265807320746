package command

import (
	"regexp"
	"strings"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// node status shows, as upstream 1.6.5 does, "Allocation Resource
// Utilization" (what the running allocations use, measured by their
// client, against what the node offers them) between "Allocated
// Resources" and "Host Resource Utilization", the host's uptime, the
// whole node ID and a "Driver Status" line; -verbose names the driver
// table "Drivers" and puts the attributes after the allocations. An
// operator reading both tools' output finds each thing where upstream
// puts it.
func TestNodeStatus_AllocationUtilization(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	nodeID := a.Client().NodeID()
	code, out, errOut := run(t, a, jobRun, writeJob(t, "sleeper", "raw_exec", `command = "/bin/sleep"
        args = ["300"]`))
	must.Eq(t, 0, code, must.Sprintf("stdout:\n%s\nstderr:\n%s", out, errOut))
	waitRunning(t, a, "sleeper", 1)

	code, out, errOut = run(t, a, nodeStatus, nodeID[:8])
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.RegexMatch(t, regexp.MustCompile(`(?m)^ID\s+= `+nodeID+`$`), out)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^Uptime\s+= \S+s$`), out)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^Driver Status\s+= .*raw_exec`), out)
	// A sleeping process uses some memory and next to no CPU; the totals
	// are those of Allocated Resources.
	alloc := regexp.MustCompile(`Allocated Resources\nCPU\s+Memory\s+Disk\n100/(\d+) MHz\s+64 MiB/(\S+ \S+)\s`).FindStringSubmatch(out)
	must.SliceLen(t, 3, alloc, must.Sprint(out))
	must.RegexMatch(t, regexp.MustCompile(`\n\nAllocation Resource Utilization\nCPU\s+Memory\n\d+/`+alloc[1]+` MHz\s+[1-9][0-9.]* [KM]iB/`+regexp.QuoteMeta(alloc[2])+`\n\nHost Resource Utilization\n`), out)
	must.StrNotContains(t, out, "\nAttributes\n")

	code, out, errOut = run(t, a, nodeStatus, "-verbose", nodeID[:8])
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.StrNotContains(t, out, "Driver Status")
	must.RegexMatch(t, regexp.MustCompile(`\n\nDrivers\nDriver\s+Detected\s+Healthy\s+Message\s+Time\n`), out)
	must.StrContains(t, out, "Allocation Resource Utilization")
	must.Less(t, strings.Index(out, "\nAttributes\n"), strings.Index(out, "\nAllocations\n"), must.Sprint("attributes last, as upstream"))
}

// Sizes read as upstream's CLI prints them (go-humanize's IBytes): one
// decimal below 10 of a unit, none from 10 on, after rounding.
func TestFormatBytes_Humanized(t *testing.T) {
	for n, want := range map[uint64]string{
		0:               "0 B",
		1023:            "1023 B",
		1024:            "1.0 KiB",
		3 << 20:         "3.0 MiB",
		3 << 29:         "1.5 GiB",
		58 << 20:        "58 MiB",
		25275990016:     "24 GiB",
		9<<30 + 990<<20: "10 GiB", // 9.97 rounds to 10.0, printed whole
		252 << 30:       "252 GiB",
		1126 << 20:      "1.1 GiB",
		23860 << 20:     "23 GiB",
		12 << 40:        "12 TiB",
	} {
		must.Eq(t, want, formatBytes(n), must.Sprint(n))
	}
	must.Eq(t, "64 MiB", formatMB(64))
	must.Eq(t, "24 GiB", formatMB(24105))
}
