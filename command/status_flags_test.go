package command

import (
	"regexp"
	"strings"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// The status flags an operator types from habit do what upstream's do:
// alloc status -short and node status -short keep to the basics, node
// status -self finds the local client's node without its ID, and job
// status -evals and -all-allocs add their sections.
func TestStatusFlags_UpstreamHabits(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	alloc := startJob(t, a, "web")

	t.Run("alloc status -short", func(t *testing.T) {
		code, out, errOut := run(t, a, allocStatus, "-short", alloc.ID[:8])
		must.Eq(t, 0, code, must.Sprint(errOut))
		must.StrContains(t, out, "Client Status       = running")
		must.StrContains(t, out, "\nTasks\n")
		must.RegexMatch(t, regexp.MustCompile(`(?m)^Name\s+State\s+Last Event\s+Time$`), out)
		must.RegexMatch(t, regexp.MustCompile(`(?m)^web\s+running\s+Started\s+\S+`), out)
		must.StrNotContains(t, out, "Recent Events")
		must.StrNotContains(t, out, "Task Resources")
	})

	t.Run("node status -self", func(t *testing.T) {
		code, out, errOut := run(t, a, nodeStatus, "-self")
		must.Eq(t, 0, code, must.Sprint(errOut))
		must.StrContains(t, out, "ID          = "+alloc.NodeID[:8])
		must.StrContains(t, out, "Allocations")

		code, out, errOut = run(t, a, nodeStatus, "-self", "-verbose", "-short")
		must.Eq(t, 0, code, must.Sprint(errOut))
		must.StrContains(t, out, "ID          = "+alloc.NodeID)
		must.StrNotContains(t, out, "Allocations")
		must.StrNotContains(t, out, "Node Events")

		code, _, errOut = run(t, a, nodeStatus, "-self", alloc.NodeID)
		must.Eq(t, 1, code)
		must.StrContains(t, errOut, "With -self this command takes no argument")
	})

	t.Run("node status -short", func(t *testing.T) {
		code, out, errOut := run(t, a, nodeStatus, "-short", alloc.NodeID[:8])
		must.Eq(t, 0, code, must.Sprint(errOut))
		must.StrContains(t, out, "Status      = ready")
		must.StrNotContains(t, out, "Allocated Resources")
	})

	t.Run("job status -evals -all-allocs", func(t *testing.T) {
		code, out, errOut := run(t, a, jobStatusCmd, "web")
		must.Eq(t, 0, code, must.Sprint(errOut))
		must.StrNotContains(t, out, "\nEvaluations\n")

		code, out, errOut = run(t, a, jobStatusCmd, "-evals", "-all-allocs", "web")
		must.Eq(t, 0, code, must.Sprint(errOut))
		must.StrContains(t, out, "\nEvaluations\n")
		must.StrContains(t, out, alloc.EvalID[:8])
		must.StrContains(t, out, "job-register")
		must.True(t, strings.Index(out, "Evaluations") < strings.Index(out, "Allocations"))
		must.StrContains(t, out, alloc.ID[:8])
	})
}
