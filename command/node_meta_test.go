package command

import (
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/cli"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

func nodeMetaApply(m Meta) cli.Command { return &NodeMetaApplyCommand{Meta: m} }
func nodeMetaRead(m Meta) cli.Command  { return &NodeMetaReadCommand{Meta: m} }

// node meta apply sets and unsets keys, config keys included, and node
// meta read shows the three views under upstream's headings; -node-id
// takes a prefix as the other node commands do.
func TestNodeMeta_ApplyRead(t *testing.T) {
	a := agenttest.NewDevAgent(t, func(c *agent.Config) { c.Client.Meta = map[string]string{"zone": "a"} })
	nodeID := a.Client().NodeID()

	code, _, errOut := run(t, a, nodeMetaApply, "-unset", "zone", "rack=r2", "tier=edge")
	must.Eq(t, 0, code, must.Sprint(errOut))
	code, out, errOut := run(t, a, nodeMetaRead, "-node-id", nodeID[:6])
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.RegexMatch(t, regexp.MustCompile(`(?s)^All Meta\nrack = r2\ntier = edge\n\nDynamic Meta\nrack = r2\ntier = edge\nzone = <unset>\n\nStatic Meta\nzone = a\n$`), out)

	code, out, _ = run(t, a, nodeMetaRead, "-json")
	must.Eq(t, 0, code)
	must.StrContains(t, out, `"Dynamic": {`)

	code, _, errOut = run(t, a, nodeMetaApply, "rack")
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, `"rack" is not of the form key=value`)
	code, _, errOut = run(t, a, nodeMetaApply)
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, "Nothing to apply")
}

// node status shows the host's utilization from its client, and -stats
// each CPU, the memory and the disk, under upstream's headings.
func TestNodeStatus_Stats(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	nodeID := a.Client().NodeID()

	code, out, errOut := run(t, a, nodeStatus, nodeID[:8])
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.StrContains(t, out, "Host Resource Utilization\nCPU")
	must.StrNotContains(t, out, "CPU Stats")

	code, out, errOut = run(t, a, nodeStatus, "-stats", nodeID[:8])
	must.Eq(t, 0, code, must.Sprint(errOut))
	for _, want := range []string{"CPU Stats\nCPU    = cpu", "Memory Stats\nTotal     = ", "Disk Stats\nDevice         = ", "Inodes Percent = "} {
		must.StrContains(t, out, want)
	}
	// The allocations still come last.
	must.Less(t, strings.Index(out, "\nAllocations\n"), strings.Index(out, "Disk Stats"))
	must.RegexMatch(t, regexp.MustCompile(`(?m)^Inodes Percent = \d+\.\d\d%$`), out)
}
