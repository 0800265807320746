package command

import (
	"fmt"
	"strings"

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
    Ask the client to skip the group's shutdown delay.

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
	if flags.NArg() != 1 {
		return c.argsError("This command takes one argument: <allocation>", "alloc stop")
	}
	prefix := flags.Arg(0)
	if err := checkPrefix("Alloc", prefix); err != nil {
		c.Ui.Error(err.Error())
		return exitError
	}
	client, err := c.Client()
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error initializing client: %v", err))
		return exitError
	}
	stubs, _, err := client.Allocations().List(&api.QueryOptions{Prefix: prefix})
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error querying allocations: %v", err))
		return exitError
	}
	stub, ok, matches := pickByPrefix(stubs, func(a *api.AllocationListStub) string { return a.ID }, prefix)
	if !ok {
		if len(matches) == 0 {
			c.Ui.Error(fmt.Sprintf("No allocation(s) with prefix or id %q found", prefix))
		} else {
			ids := make([]string, len(matches))
			for i, m := range matches {
				ids[i] = m.ID
			}
			c.Ui.Error(fmt.Sprintf("Prefix matched multiple allocations:\n\n%s", strings.Join(ids, "\n")))
		}
		return exitError
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
	if detach {
		c.Ui.Output(resp.EvalID)
		return exitOK
	}
	return newEvalMonitor(c.Ui, client, view{verbose: verbose}).monitor(resp.EvalID)
}
