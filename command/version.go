package command

import (
	"strings"

	"github.com/nomad-edge/nomad/command/agent"
)

// VersionCommand is `nomad version`.
type VersionCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *VersionCommand) Synopsis() string { return "Print the Nomad version" }

// Help implements cli.Command.
func (c *VersionCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad version

  Print the version of this binary.
`)
}

// Run implements cli.Command.
func (c *VersionCommand) Run(args []string) int {
	c.Ui.Output("Nomad v" + agent.Version)
	c.Ui.Output("nomad-edge: a Nomad-compatible orchestrator for intermittently connected nodes")
	return exitOK
}
