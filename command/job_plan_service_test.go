package command

import (
	"os"
	"strings"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// `job plan` of a change to a service and its check shows, as upstream's
// does, an edited "Service" listing its fields, the Tags set and the
// "Check" with the changed path, applied in place: the operator sees what
// a retag or a new health path does before running it.
func TestJobPlan_ServiceAndCheckDiff(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	src := `job "shop" {
  group "web" {
    network {
      port "http" {}
    }
    service {
      name = "shop-api"
      port = "http"
      tags = ["v1", "edge"]
      check {
        name     = "alive"
        type     = "http"
        path     = "/health"
        interval = "10s"
        timeout  = "2s"
      }
    }
    task "web" {
      driver = "mock_driver"
      config { run_for = "5m" }
    }
  }
}
`
	path := writeFile(t, "shop.hcl", src)
	code, _, stderr := run(t, a, jobRun, "-detach", path)
	must.Eq(t, 0, code, must.Sprint(stderr))
	waitRunning(t, a, "shop", 1)

	edited := strings.NewReplacer(`"v1", "edge"`, `"v2", "edge"`, `"/health"`, `"/ready"`).Replace(src)
	must.NoError(t, os.WriteFile(path, []byte(edited), 0o600))
	code, out, stderr := run(t, a, jobPlan, path)
	must.Eq(t, planNoChanges, code, must.Sprintf("an in-place update changes no allocation\n%s%s", out, stderr))
	for _, want := range []string{
		`+/- Task Group: "web" (1 in-place update)`,
		"  +/- Service {\n",
		`    Name: "shop-api"`,
		`    PortLabel: "http"`,
		"    +/- Tags {\n",
		`      + Tags: "v2"`,
		`        Tags: "edge"`,
		`      - Tags: "v1"`,
		"    +/- Check {\n",
		`      +/- Path: "/health" => "/ready"`,
		`        Interval: "10000000000"`,
	} {
		must.StrContains(t, out, want)
	}
}
