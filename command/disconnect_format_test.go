package command

import (
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/api"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// unknownAlloc is an allocation marked unknown 2m10s before now, on a node
// that disconnected 2m12s before now, in a group with a one-hour window and
// upstream's default service reschedule policy (30s, exponential).
func unknownAlloc(replace bool) (*api.Allocation, *api.Node) {
	job := &api.Job{ID: new("web"), Type: new(api.JobTypeService), Version: new(uint64(0)), TaskGroups: []*api.TaskGroup{{
		Name:             new("web"),
		Disconnect:       &api.DisconnectStrategy{LostAfter: new(time.Hour), Replace: new(replace)},
		ReschedulePolicy: api.DefaultReschedulePolicy(api.JobTypeService),
	}}}
	a := &api.Allocation{
		ID: "a1b2c3d4-0000-0000-0000-000000000000", Name: "web.web[0]", NodeID: "n1n2n3n4-0000", JobID: "web",
		TaskGroup: "web", Job: job, DesiredStatus: api.AllocDesiredStatusRun,
		ClientStatus: api.AllocClientStatusUnknown, ClientDescription: "alloc is unknown since its node is disconnected",
		AllocStates:    []*api.AllocState{{Value: api.AllocClientStatusUnknown, Time: now.Add(-130 * time.Second)}},
		FollowupEvalID: "timeout-eval",
		TaskStates:     map[string]*api.TaskState{"web": {State: "running"}},
	}
	node := &api.Node{ID: a.NodeID, Status: api.NodeStatusDisconnected, StatusUpdatedAt: now.Add(-132 * time.Second).Unix()}
	return a, node
}

// The disconnect-timeout evaluation an unknown allocation carries is when it
// becomes lost, not when it is replaced.
var timeoutEval = &api.Evaluation{ID: "timeout-eval", Status: api.EvalStatusPending, WaitUntil: now.Add(58 * time.Minute)}

func header(a *api.Allocation, node *api.Node) string {
	return formatKV(allocHeader(a, allocFacts{node: node, followup: timeoutEval}, view{now: now}))
}

// alloc status of an unknown allocation says since when its node is out of
// contact, since when the servers hold it unknown, when it becomes lost, and
// when it is replaced by the group's reschedule policy: not the end of the
// window, which upstream's layout would show as the eligibility.
func TestAllocStatus_UnknownExplained(t *testing.T) {
	a, node := unknownAlloc(true)
	a.AllocStates[0].Time = now.Add(-10 * time.Second) // the 30s delay has not passed
	out := header(a, node)
	for _, want := range []string{
		"Client Status          = unknown",
		"Node Status            = disconnected 2m12s ago",
		"Unknown Since          = 10s ago",
		"Lost After             = 59m50s from now, unless its node reconnects",
		"Reschedule Eligibility = 20s from now",
	} {
		must.StrContains(t, out, want)
	}
	must.StrNotContains(t, out, "58m")

	task := formatTask(a, "web")
	must.StrContains(t, task, `Task "web" is "running" (last reported by its client before its node disconnected)`)
}

// Once its replacement exists, an unknown allocation names it and shows no
// eligibility: nothing more will be placed for it.
func TestAllocStatus_UnknownReplaced(t *testing.T) {
	a, node := unknownAlloc(true)
	a.NextAllocation = "r1r2r3r4-0000"
	out := header(a, node)
	must.StrContains(t, out, "Replacement Alloc ID = r1r2r3r4")
	must.StrNotContains(t, out, "Reschedule Eligibility")
}

// With the delay passed and no replacement yet, the servers are waiting
// for a node that can take it; with replace = false the replacement waits
// for the end of the window.
func TestAllocStatus_UnknownEligibility(t *testing.T) {
	a, node := unknownAlloc(true)
	must.StrContains(t, header(a, node), "Reschedule Eligibility = now (waiting for a node that can take the replacement)")

	a, node = unknownAlloc(false)
	must.StrContains(t, header(a, node), "Reschedule Eligibility = 57m50s from now (when lost)")

	// An allocation the servers hear from keeps upstream's reading of its
	// follow-up evaluation.
	a.ClientStatus, a.AllocStates = api.AllocClientStatusFailed, nil
	out := formatKV(allocHeader(a, allocFacts{followup: timeoutEval}, view{now: now}))
	must.StrContains(t, out, "Reschedule Eligibility = 58m from now")
	must.StrNotContains(t, out, "Unknown Since")
	must.StrNotContains(t, formatTask(a, "web"), "last reported")
}

// node status lists how long each disconnected node has been so, in a last
// column that appears only when some node is disconnected, so upstream's
// columns keep their places; the node detail says it on its status line.
func TestNodeStatus_DisconnectedFor(t *testing.T) {
	nodes := []*api.NodeListStub{
		{ID: "aaaaaaaa-1", NodePool: "default", Datacenter: "dc1", Name: "edge-1", SchedulingEligibility: "eligible",
			Status: api.NodeStatusDisconnected, StatusUpdatedAt: now.Add(-130 * time.Second).Unix()},
		{ID: "bbbbbbbb-2", NodePool: "default", Datacenter: "dc1", Name: "edge-2", SchedulingEligibility: "eligible",
			Status: api.NodeStatusReady, StatusUpdatedAt: now.Add(-time.Hour).Unix()},
	}
	lines := strings.Split(formatNodeList(nodes, view{now: now}), "\n")
	must.Eq(t, []string{"ID", "Node Pool", "DC", "Name", "Class", "Drain", "Eligibility", "Status", "Disconnected For"}, columns(lines[0]))
	must.Eq(t, []string{"aaaaaaaa", "default", "dc1", "edge-1", "<none>", "false", "eligible", "disconnected", "2m10s"}, columns(lines[1]))
	must.Eq(t, []string{"bbbbbbbb", "default", "dc1", "edge-2", "<none>", "false", "eligible", "ready", "<none>"}, columns(lines[2]))

	lines = strings.Split(formatNodeList(nodes[1:], view{now: now}), "\n")
	must.Eq(t, []string{"ID", "Node Pool", "DC", "Name", "Class", "Drain", "Eligibility", "Status"}, columns(lines[0]))

	node := &api.Node{Status: api.NodeStatusDisconnected, StatusUpdatedAt: nodes[0].StatusUpdatedAt}
	must.Eq(t, "disconnected (since 2m10s ago)", nodeStatusLine(node, view{now: now}))
	node.Status = api.NodeStatusReady
	must.Eq(t, "ready", nodeStatusLine(node, view{now: now}))
}

// alloc status of either copy of a reconnect shows the decision record:
// the rule, the strategy, both copies with their placement scores (this
// one marked) and when it was decided, so an operator can tell why this
// copy runs or not. An allocation without a record shows no section.
func TestAllocStatus_ReconnectDecision(t *testing.T) {
	a, _ := unknownAlloc(true)
	must.Eq(t, "", formatReconnectDecision(a, view{now: now}))

	a.ReconnectDecision = &api.ReconnectDecision{
		Rule: "strategy", Strategy: "best_score",
		KeptAllocID: "k1k2k3k4-0000", KeptScore: 0.9124, StoppedAllocID: a.ID, StoppedScore: 0.4,
		EvalID: "e1e2e3e4-0000", Time: now.Add(-3 * time.Minute).UnixNano(),
	}
	out := formatReconnectDecision(a, view{now: now})
	for _, want := range []string{
		"Reconnect Decision\n",
		"Rule       = strategy",
		"Strategy   = best_score",
		"Kept       = k1k2k3k4 (placement score 0.912)",
		"Stopped    = a1b2c3d4 (placement score 0.400), this allocation",
		"Evaluation = e1e2e3e4",
		"Decided    = 3m ago",
	} {
		must.StrContains(t, out, want)
	}
	a.ReconnectDecision.KeptAllocID = ""
	must.StrContains(t, formatReconnectDecision(a, view{now: now}), "Kept       = <none>")
}
