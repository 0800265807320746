package command

import (
	"fmt"
	"strings"
	"time"

	"github.com/nomad-edge/nomad/api"
)

// AllocStopCommand is `nomad alloc stop`.
type AllocStopCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *AllocStopCommand) Synopsis() string { return "Stop and replace an allocation" }

// Help implements cli.Command.
func (c *AllocStopCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad alloc stop [options] <allocation>

  Stop one allocation and have the scheduler place a replacement, so the
  group keeps its count. <allocation> is an allocation ID or a unique
  prefix of one.

  An allocation whose node is disconnected (client status "unknown") is
  stopped on the servers at once and replaced; its client stops it when it
  reconnects.

  The stop is carried out by an evaluation, which is followed until it
  finishes, as with 'nomad job run'.

` + generalOptions() + `

Stop Options:

  -detach
    Print the evaluation ID and exit without following it.

  -no-shutdown-delay
    Ask the client to skip the group's and the tasks' shutdown_delay and
    send the kill signal at once. On an allocation stopped already whose
    client is waiting out its delays, this cuts the wait short.

  -verbose
    Show full IDs.
`)
}

// Run implements cli.Command.
func (c *AllocStopCommand) Run(args []string) int {
	var detach, noDelay, verbose bool
	flags := c.FlagSet("alloc stop")
	flags.BoolVar(&detach, "detach", false, "")
	flags.BoolVar(&noDelay, "no-shutdown-delay", false, "")
	flags.BoolVar(&verbose, "verbose", false, "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	client, stub, code := c.allocArg(flags.Args(), "alloc stop", view{verbose: verbose, now: time.Now()})
	if stub == nil {
		return code
	}
	q := &api.QueryOptions{}
	if noDelay {
		q.Params = map[string]string{"no_shutdown_delay": "true"}
	}
	resp, err := client.Allocations().Stop(&api.Allocation{ID: stub.ID}, q)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error stopping allocation: %v", err))
		return exitError
	}
	if resp.EvalID == "" {
		// Stopped already: the request only cut its shutdown_delay short.
		c.Ui.Output(fmt.Sprintf("Allocation %q is already stopping; its shutdown_delay is skipped", stub.ID))
		return exitOK
	}
	if detach {
		c.Ui.Output(resp.EvalID)
		return exitOK
	}
	return newEvalMonitor(c.Ui, client, view{verbose: verbose}).monitor(resp.EvalID)
}
