package command

import (
	"fmt"
	"strings"

	"github.com/hashicorp/cli"
)

// runParent is the Run of a command that only groups subcommands (`nomad
// server`, `nomad operator raft`): given a word the table does not know, it
// says so instead of printing the bare help screen, which reads as if the
// typo had been accepted. With no argument it prints help, as upstream.
func (m *Meta) runParent(name string, args []string) int {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return cli.RunResultHelp
	}
	m.Ui.Error(fmt.Sprintf("%q is not a subcommand of \"nomad %s\".", args[0], name))
	m.Ui.Error(fmt.Sprintf("Run 'nomad %s -help' for the list of subcommands.", name))
	return exitError
}
