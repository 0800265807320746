package command

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/nomad-edge/nomad/api"
)

// OperatorMetricsCommand is `nomad operator metrics`.
type OperatorMetricsCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *OperatorMetricsCommand) Synopsis() string {
	return "Retrieve Nomad metrics"
}

// Help implements cli.Command.
func (c *OperatorMetricsCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad operator metrics [options]

  Print the agent's metrics (GET /v1/metrics): the in-memory summary as
  JSON, or the Prometheus text format. The agent answering is the one
  NOMAD_ADDR names; the leader's gauges (broker, job summaries,
  nomad.nomad.disconnect.*) are only on the leader.

` + generalOptions() + `

Metrics Options:

  -pretty
    Indent the JSON summary.

  -format <format>
    "prometheus" for the Prometheus text format; the agent needs
    telemetry { prometheus_metrics = true }.
`)
}

// Run implements cli.Command.
func (c *OperatorMetricsCommand) Run(args []string) int {
	var pretty bool
	var format string
	flags := c.FlagSet("operator metrics")
	flags.BoolVar(&pretty, "pretty", false, "")
	flags.StringVar(&format, "format", "", "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	if flags.NArg() != 0 {
		return c.argsError("This command takes no arguments", "operator metrics")
	}
	if format != "" && format != "prometheus" {
		return c.argsError(fmt.Sprintf("Invalid -format %q: the only format is \"prometheus\"", format), "operator metrics")
	}
	client, err := c.Client()
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error initializing client: %v", err))
		return exitError
	}
	q := &api.QueryOptions{}
	if format != "" {
		q.Params = map[string]string{"format": format}
	}
	body, err := client.Operator().Metrics(q)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error getting metrics: %v", err))
		return exitError
	}
	if pretty && format == "" {
		var out bytes.Buffer
		if err := json.Indent(&out, body, "", "    "); err == nil {
			body = out.Bytes()
		}
	}
	c.Ui.Output(strings.TrimRight(string(body), "\n"))
	return exitOK
}
