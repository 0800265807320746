package command

import (
	"regexp"
	"testing"

	"github.com/hashicorp/cli"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

func autopilotGet(m Meta) cli.Command    { return &OperatorAutopilotGetCommand{Meta: m} }
func autopilotSet(m Meta) cli.Command    { return &OperatorAutopilotSetCommand{Meta: m} }
func autopilotHealth(m Meta) cli.Command { return &OperatorAutopilotHealthCommand{Meta: m} }

// get-config prints upstream's lines; set-config changes only the flags
// given and says so as upstream does; Enterprise flags and bad values are
// refused by name; health shows the lone dev server as the healthy leader.
func TestOperatorAutopilot(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	code, out, errOut := run(t, a, autopilotGet)
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.Eq(t, `CleanupDeadServers = true
LastContactThreshold = 200ms
MaxTrailingLogs = 250
MinQuorum = 0
ServerStabilizationTime = 10s
EnableRedundancyZones = false
DisableUpgradeMigration = false
EnableCustomUpgrades = false
`, out)

	code, out, errOut = run(t, a, autopilotSet, "-max-trailing-logs=300", "-cleanup-dead-servers=false", "-min-quorum=3")
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.Eq(t, "Configuration updated!\n", out)
	_, out, _ = run(t, a, autopilotGet)
	must.StrContains(t, out, "CleanupDeadServers = false\nLastContactThreshold = 200ms\nMaxTrailingLogs = 300\nMinQuorum = 3\n")

	for args, want := range map[string]string{
		"-disable-upgrade-migration=true": "-disable-upgrade-migration is an upstream Enterprise option",
		"-last-contact-threshold=soon":    `Invalid -last-contact-threshold "soon"`,
		"-cleanup-dead-servers=maybe":     "must be true or false",
	} {
		code, _, errOut = run(t, a, autopilotSet, args)
		must.Eq(t, 1, code)
		must.StrContains(t, errOut, want)
	}

	code, out, errOut = run(t, a, autopilotHealth)
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.RegexMatch(t, regexp.MustCompile(`(?m)^Healthy +\= true$`), out)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^Failure Tolerance \= 0$`), out)
	must.StrContains(t, out, "Serf Status")
}
