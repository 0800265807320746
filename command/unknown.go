package command

import (
	"fmt"
	"strings"

	"github.com/hashicorp/cli"
)

// unknownCommand reports a first word that is no command, which the cli
// library would answer with the bare help screen and exit 127: that reads
// as if the typo had been accepted, and upstream's scripts test for 1.
func unknownCommand(args []string, commands map[string]cli.CommandFactory, ui cli.Ui) (int, bool) {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return 0, false
	}
	if _, ok := commands[args[0]]; ok {
		return 0, false
	}
	ui.Error(fmt.Sprintf("%q is not a nomad command.", args[0]))
	ui.Error("Run 'nomad -help' for the list of commands.")
	return exitError, true
}
