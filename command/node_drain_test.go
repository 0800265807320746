package command

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/cli"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

func nodeDrain(m Meta) cli.Command       { return &NodeDrainCommand{Meta: m} }
func nodeEligibility(m Meta) cli.Command { return &NodeEligibilityCommand{Meta: m} }
func nodePurge(m Meta) cli.Command       { return &NodePurgeCommand{Meta: m} }

// node drain on an empty node completes at once; the monitor says so, and
// node status -verbose shows the last drain and its events; eligibility
// makes the node schedulable again; purge removes it.
func TestNodeDrain_EligibilityPurge(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	nodeID := a.Client().NodeID()

	code, out, errOut := run(t, a, nodeDrain, "-enable", "-yes", "-deadline", "10m", "-meta", "reason=kernel", nodeID[:6])
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.StrContains(t, out, `Node "`+nodeID+`" drain strategy set`)
	must.StrContains(t, out, `Node "`+nodeID+`" drain complete`)

	code, out, errOut = run(t, a, nodeStatus, "-verbose", nodeID)
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.StrContains(t, out, "Drain       = false")
	must.StrContains(t, out, "Eligibility = ineligible")
	must.StrContains(t, out, "Last Drain\nStatus  = complete")
	must.StrContains(t, out, "Meta    = reason=kernel")
	must.StrContains(t, out, "Drain      Node drain complete")
	must.Eq(t, []string{"Time", "Subsystem", "Message", "Details"}, columns(strings.Split(strings.Split(out, "Node Events\n")[1], "\n")[0]))

	code, out, errOut = run(t, a, nodeEligibility, "-enable", "-self")
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.StrContains(t, out, `Node "`+nodeID+`" scheduling eligibility set: eligible for scheduling`)
	code, out, _ = run(t, a, nodeStatus)
	must.Eq(t, 0, code)
	must.Eq(t, "eligible", columns(strings.Split(strings.TrimSpace(out), "\n")[1])[6])

	code, out, errOut = run(t, a, nodePurge, nodeID)
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.StrContains(t, out, `Node "`+nodeID+`" purged`)
}

// A drain in progress shows in node status with its options; -disable ends
// it and, unless -keep-ineligible, makes the node eligible.
func TestNodeDrain_DetachAndDisable(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	nodeID := a.Client().NodeID()
	code, out, _ := run(t, a, jobRun, writeJob(t, "web", "mock_driver", `run_for = "5m"`))
	must.Eq(t, 0, code, must.Sprint(out))
	waitRunning(t, a, "web", 1)

	// The only node: the allocation has nowhere to go, so the drain waits.
	code, out, errOut := run(t, a, nodeDrain, "-enable", "-yes", "-detach", "-no-deadline", "-ignore-system", nodeID)
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.StrContains(t, out, "drain strategy set")
	must.StrNotContains(t, out, "drain complete")
	code, out, _ = run(t, a, nodeStatus, nodeID)
	must.Eq(t, 0, code)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^Drain\s+= true; no deadline; ignoring system jobs$`), out)
	code, out, _ = run(t, a, nodeStatus)
	must.Eq(t, 0, code)
	must.Eq(t, []string{"true", "ineligible", "ready"}, columns(strings.Split(strings.TrimSpace(out), "\n")[1])[5:8])

	code, _, errOut = run(t, a, nodeEligibility, "-enable", nodeID)
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, "draining")

	code, out, errOut = run(t, a, nodeDrain, "-disable", nodeID)
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.StrContains(t, out, `Node "`+nodeID+`" drain strategy unset`)
	node, _, err := apiClient(t, a).Nodes().Info(nodeID, nil)
	must.NoError(t, err)
	must.Eq(t, api.NodeSchedulingEligible, node.SchedulingEligibility)
	must.Eq(t, api.DrainStatusCanceled, node.LastDrain.Status)
}

// Bad flag combinations are refused before anything is sent, naming the
// flags.
func TestNodeDrain_FlagErrors(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	nodeID := a.Client().NodeID()
	cases := map[string][]string{
		"exactly one of -enable or -disable":        {nodeID},
		"-force and -no-deadline":                   {"-enable", "-force", "-no-deadline", nodeID},
		"-deadline -1m0s: must be positive":         {"-enable", "-deadline", "-1m", nodeID},
		"only apply with -enable":                   {"-disable", "-force", nodeID},
		"-monitor cannot be combined":               {"-monitor", "-enable", nodeID},
		"No node(s) with prefix":                    {"-disable", "ffff"},
		"With -self this command takes no argument": {"-disable", "-self", nodeID},
	}
	for want, args := range cases {
		code, _, errOut := run(t, a, nodeDrain, args...)
		must.Eq(t, 1, code, must.Sprint(args))
		must.StrContains(t, errOut, want)
	}
	code, _, errOut := run(t, a, nodeEligibility, nodeID)
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, "Exactly one of -enable or -disable")
}

// The Drain line says how a drain ends: forced, no deadline, or when.
func TestFormatDrain(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	must.Eq(t, "false", formatDrain(&api.Node{}))
	must.Eq(t, "true; force drain", formatDrain(&api.Node{Drain: true, DrainStrategy: &api.DrainStrategy{DrainSpec: api.DrainSpec{Deadline: -1}, ForceDeadline: at}}))
	must.Eq(t, "true; "+formatTime(at)+" deadline", formatDrain(&api.Node{Drain: true, DrainStrategy: &api.DrainStrategy{DrainSpec: api.DrainSpec{Deadline: time.Hour}, ForceDeadline: at}}))
}

// -force stops what the node runs even with nowhere to move it, and the
// monitor follows the drain to its end.
func TestNodeDrain_ForceWithNowhereToGo(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	nodeID := a.Client().NodeID()
	code, out, _ := run(t, a, jobRun, writeJob(t, "web", "mock_driver", `run_for = "5m"`))
	must.Eq(t, 0, code, must.Sprint(out))
	alloc := waitRunning(t, a, "web", 1)[0]

	code, out, errOut := run(t, a, nodeDrain, "-enable", "-yes", "-force", nodeID)
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.StrContains(t, out, `Node "`+nodeID+`" drain complete`)
	got, _, err := apiClient(t, a).Allocations().Info(alloc.ID, nil)
	must.NoError(t, err)
	must.Eq(t, api.AllocDesiredStatusStop, got.DesiredStatus)
	must.Eq(t, "alloc is being migrated", got.DesiredDescription)
}
