package command

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// AgentInfoCommand is `nomad agent-info`.
type AgentInfoCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *AgentInfoCommand) Synopsis() string {
	return "Display status information about the local agent"
}

// Help implements cli.Command.
func (c *AgentInfoCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad agent-info [options]

  Show the agent's stats, section by section (client, nomad, raft,
  runtime, serf): the numbers to look at when debugging an agent.

` + generalOptions() + `

Agent Info Options:
` + outputFlagsHelp + `
`)
}

// Run implements cli.Command.
func (c *AgentInfoCommand) Run(args []string) int {
	var out outputFlags
	flags := c.FlagSet("agent-info")
	out.register(flags)
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	if flags.NArg() != 0 {
		return c.argsError("This command takes no arguments", "agent-info")
	}
	client, err := c.Client()
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error initializing client: %v", err))
		return exitError
	}
	self, err := client.Agent().Self()
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error querying agent info: %v", err))
		return exitError
	}
	if out.set() {
		return c.writeFormatted(out, self)
	}
	var b strings.Builder
	for _, section := range slices.Sorted(maps.Keys(self.Stats)) {
		fmt.Fprintln(&b, section)
		stats := self.Stats[section]
		for _, k := range slices.Sorted(maps.Keys(stats)) {
			fmt.Fprintf(&b, "  %s = %s\n", k, stats[k])
		}
	}
	c.Ui.Output(strings.TrimRight(b.String(), "\n"))
	return exitOK
}
