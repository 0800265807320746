package command

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/cli"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

func scalingPolicyList(m Meta) cli.Command { return &ScalingPolicyListCommand{Meta: m} }
func scalingPolicyInfo(m Meta) cli.Command { return &ScalingPolicyInfoCommand{Meta: m} }
func jobScalingEvents(m Meta) cli.Command  { return &JobScalingEventsCommand{Meta: m} }

// The scaling commands print upstream's columns (checked against the
// upstream binary's output): the policy list, one policy by ID prefix
// with its body, and the job's scaling events after a scale.
func TestScalingCommands(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	path := filepath.Join(t.TempDir(), "web.nomad.hcl")
	must.NoError(t, os.WriteFile(path, []byte(`job "web" {
  group "g" {
    count = 2
    scaling {
      min = 1
      max = 5
      policy {
        cooldown = "10s"
      }
    }
    task "t" {
      driver = "mock_driver"
      config {
        run_for = "1h"
      }
    }
  }
}
`), 0o600))
	code, _, errOut := run(t, a, jobRun, "-detach", path)
	must.Eq(t, 0, code, must.Sprint(errOut))

	code, out, errOut := run(t, a, scalingPolicyList)
	must.Eq(t, 0, code, must.Sprint(errOut))
	lines := strings.Split(strings.TrimSpace(out), "\n")
	must.Len(t, 2, lines)
	must.Eq(t, []string{"ID", "Enabled", "Type", "Target"}, strings.Fields(lines[0]))
	fields := strings.Fields(lines[1])
	must.Eq(t, []string{"true", "horizontal", "Namespace:default,Job:web,Group:g"}, fields[1:])
	must.Eq(t, 8, len(fields[0]))

	code, out, errOut = run(t, a, scalingPolicyList, "-job", "other")
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.Eq(t, "No policies found\n", out)

	code, out, errOut = run(t, a, scalingPolicyInfo, fields[0][:4])
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.StrContains(t, out, "Target  = Namespace:default,Job:web,Group:g")
	must.StrContains(t, out, "Max     = 5")
	must.StrContains(t, out, "Policy:\n{\n    \"cooldown\": \"10s\"\n}")

	code, _, errOut = run(t, a, scalingPolicyInfo, "zzzz")
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, `No scaling policies with prefix or id "zzzz" found`)

	code, out, _ = run(t, a, jobScalingEvents, "web")
	must.Eq(t, 0, code)
	must.Eq(t, "No events found\n", out)
	code, _, errOut = run(t, a, jobScale, "-detach", "web", "g", "9")
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, "group count was greater than scaling policy maximum: 9 > 5")
}
