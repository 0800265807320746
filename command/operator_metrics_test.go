package command

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nomad-edge/nomad/testutil/wait"

	"github.com/hashicorp/cli"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

func operatorMetrics(m Meta) cli.Command { return &OperatorMetricsCommand{Meta: m} }

// `nomad operator metrics` prints the agent's JSON summary (indented with
// -pretty) and, with -format prometheus, the text exposition; another
// format is refused before the agent is asked.
func TestOperatorMetrics(t *testing.T) {
	a := agenttest.NewDevAgent(t, func(c *agent.Config) {
		every := 20 * time.Millisecond
		on := true
		c.Telemetry = &agent.Telemetry{CollectionInterval: &every, PrometheusMetrics: &on}
	})
	code, out, errOut := run(t, a, operatorMetrics, "-pretty")
	must.Eq(t, 0, code, must.Sprint(errOut))
	var summary map[string]any
	must.NoError(t, json.Unmarshal([]byte(out), &summary))
	must.MapContainsKey(t, summary, "Gauges")
	must.StrContains(t, out, "\n    \"Gauges\"")

	wait.Poll(t, 10*time.Second, "broker gauge in the Prometheus output", func() (bool, string) {
		code, out, errOut := run(t, a, operatorMetrics, "-format", "prometheus")
		must.Eq(t, 0, code, must.Sprint(errOut))
		return strings.Contains(out, "# TYPE nomad_nomad_broker_total_ready gauge"), out
	})

	code, _, errOut = run(t, a, operatorMetrics, "-format", "xml")
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, `Invalid -format "xml"`)
}
