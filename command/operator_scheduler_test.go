package command

import (
	"encoding/json"
	"testing"

	"github.com/hashicorp/cli"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

func schedGet(m Meta) cli.Command { return &OperatorSchedulerGetConfigCommand{Meta: m} }
func schedSet(m Meta) cli.Command { return &OperatorSchedulerSetConfigCommand{Meta: m} }

// An operator's path through `nomad operator scheduler`: get-config shows
// upstream's rows and defaults, set-config changes only the flags given,
// -check-index with a stale index writes nothing and fails, an invalid
// value is refused naming the field, and preemption and memory
// oversubscription switches are taken.
func TestOperatorScheduler_CLI(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)

	code, out, stderr := run(t, a, schedGet)
	must.Eq(t, 0, code, must.Sprint(stderr))
	must.StrContains(t, out, "Scheduler Algorithm           = binpack")
	must.StrContains(t, out, "Pause Eval Broker             = false")
	must.StrContains(t, out, "Preemption System Scheduler   = true")

	code, out, stderr = run(t, a, schedSet, "-pause-eval-broker=true")
	must.Eq(t, 0, code, must.Sprint(stderr))
	must.StrContains(t, out, "Scheduler configuration updated!")
	code, out, stderr = run(t, a, schedGet, "-json")
	must.Eq(t, 0, code, must.Sprint(stderr))
	var resp api.SchedulerConfigurationResponse
	must.NoError(t, json.Unmarshal([]byte(out), &resp))
	must.True(t, resp.SchedulerConfig.PauseEvalBroker)
	must.False(t, resp.SchedulerConfig.RejectJobRegistration, must.Sprint("a flag not given keeps its value"))
	must.Positive(t, resp.SchedulerConfig.ModifyIndex)

	code, _, stderr = run(t, a, schedSet, "-check-index=1", "-pause-eval-broker=false")
	must.Eq(t, 1, code)
	must.StrContains(t, stderr, "check-index 1 does not match")

	code, _, stderr = run(t, a, schedSet, "-scheduler-algorithm=fair")
	must.Eq(t, 1, code)
	must.StrContains(t, stderr, "SchedulerAlgorithm")
	code, _, stderr = run(t, a, schedSet, "-scheduler-algorithm=spread")
	must.Eq(t, 0, code, must.Sprint(stderr))
	code, out, _ = run(t, a, schedGet)
	must.Eq(t, 0, code)
	must.StrContains(t, out, "Scheduler Algorithm           = spread")
	code, _, stderr = run(t, a, schedSet, "-preempt-service-scheduler=true", "-memory-oversubscription=true")
	must.Eq(t, 0, code, must.Sprint(stderr))
	code, out, _ = run(t, a, schedGet)
	must.Eq(t, 0, code)
	must.StrContains(t, out, "Preemption Service Scheduler  = true")
	must.StrContains(t, out, "Memory Oversubscription       = true")

	code, out, _ = run(t, a, schedGet)
	must.Eq(t, 0, code)
	must.StrContains(t, out, "Pause Eval Broker             = true", must.Sprint("refused writes changed nothing"))
}
