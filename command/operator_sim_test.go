package command

import (
	"testing"

	"github.com/hashicorp/cli"
	"github.com/shoenig/test/must"
)

// A bad scenario is refused before any node starts, with the flag named:
// a script that asked for the impossible must not run a different test.
func TestOperatorSim_BadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"-silence-fraction", "1.5", "-silence-for", "10s"}, "-silence-fraction must be within (0, 1]"},
		{[]string{"-silence-fraction", "0.2"}, "-silence-for is required"},
		{[]string{"-return", "later"}, `-return "later": want all or spread:<duration>`},
		{[]string{"extra"}, "takes no arguments"},
	} {
		ui := cli.NewMockUi()
		must.Eq(t, 1, RunWithUi(append([]string{"operator", "sim"}, tc.args...), ui), must.Sprint(tc.args))
		must.StrContains(t, ui.ErrorWriter.String(), tc.msg, must.Sprint(tc.args))
	}
}
