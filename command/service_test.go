package command

import (
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/cli"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent/agenttest"
	"github.com/nomad-edge/nomad/testutil/wait"
)

func serviceList(m Meta) cli.Command   { return &ServiceListCommand{Meta: m} }
func serviceInfo(m Meta) cli.Command   { return &ServiceInfoCommand{Meta: m} }
func serviceDelete(m Meta) cli.Command { return &ServiceDeleteCommand{Meta: m} }

// An operator's path through `nomad service`, with upstream's columns
// (observed on the 1.6.5 binary against this agent): list, list across
// namespaces, info and info -verbose, delete, and the argument errors.
func TestService_CLI(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	job := writeFile(t, "shop.hcl", `job "shop" {
  group "web" {
    network {
      port "http" {}
    }
    service {
      name = "${NOMAD_JOB_NAME}-api"
      port = "http"
      tags = ["v1", "edge"]
    }
    task "web" {
      driver = "mock_driver"
      config { run_for = "5m" }
    }
  }
}
`)
	code, _, stderr := run(t, a, jobRun, "-detach", job)
	must.Eq(t, 0, code, must.Sprint(stderr))

	var out string
	wait.Poll(t, 30*time.Second, "shop-api listed", func() (bool, string) {
		_, out, _ = run(t, a, serviceList)
		return strings.Contains(out, "shop-api"), out
	})
	must.Eq(t, "Service Name  Tags\nshop-api      [edge,v1]\n", out)
	_, out, _ = run(t, a, serviceList, "-namespace", "*")
	must.Eq(t, "Service Name  Namespace  Tags\nshop-api      default    [edge,v1]\n", out)

	code, out, _ = run(t, a, serviceInfo, "shop-api")
	must.Eq(t, 0, code)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	must.Len(t, 2, lines)
	must.Eq(t, []string{"Job", "ID", "Address", "Tags", "Node", "ID", "Alloc", "ID"}, strings.Fields(lines[0]))
	row := strings.Fields(lines[1])
	must.Eq(t, "shop", row[0])
	must.Eq(t, "[v1,edge]", row[2])
	must.Eq(t, 8, len(row[3]))

	_, out, _ = run(t, a, serviceInfo, "-verbose", "shop-api")
	must.StrContains(t, out, "Service Name = shop-api")
	must.StrContains(t, out, "Status       = active")
	id := strings.TrimSpace(strings.TrimPrefix(strings.Split(out, "\n")[0], "ID           ="))
	must.StrHasPrefix(t, "_nomad-task-", id)

	code, out, _ = run(t, a, serviceDelete, "shop-api", id)
	must.Eq(t, 0, code)
	must.Eq(t, "Successfully deleted service registration\n", out)
	code, _, stderr = run(t, a, serviceDelete, "shop-api", id)
	must.Eq(t, 1, code)
	must.StrContains(t, stderr, "404")
	_, out, _ = run(t, a, serviceInfo, "shop-api")
	must.Eq(t, "No service registrations found\n", out)

	code, _, stderr = run(t, a, serviceDelete, "shop-api")
	must.Eq(t, 1, code)
	must.StrContains(t, stderr, "This command takes two arguments: <service_name> and <service_id>")
	code, _, stderr = run(t, a, serviceInfo)
	must.Eq(t, 1, code)
	must.StrContains(t, stderr, "This command takes one argument: <service_name>")
	code, _, _ = run(t, a, serviceList, "extra")
	must.Eq(t, 1, code)
}
