package command

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nomad-edge/nomad/testutil/wait"

	"github.com/hashicorp/cli"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/api"
)

func allocChecks(m Meta) cli.Command { return &AllocChecksCommand{Meta: m} }

// `nomad alloc checks` shows a job file's script check through the node's
// session in upstream's layout, and -json and -t give the data as read.
func TestAllocChecksCommand(t *testing.T) {
	a := edgeServer(t)
	src := `job "cli-checks" {
  group "web" {
    task "web" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["300"]
      }
      service {
        name = "web"
        check {
          name     = "alive"
          type     = "script"
          command  = "/bin/echo"
          args     = ["all good"]
          interval = "1s"
          timeout  = "1s"
        }
      }
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
`
	path := filepath.Join(t.TempDir(), "job.nomad.hcl")
	must.NoError(t, os.WriteFile(path, []byte(src), 0o644))
	code, _, errOut := run(t, a, jobRun, "-detach", path)
	must.Eq(t, 0, code, must.Sprint(errOut))
	id := waitRunning(t, a, "cli-checks", 1)[0].ID

	var out string
	wait.Poll(t, 30*time.Second, "a successful check in the output", func() (bool, string) {
		code, o, e := run(t, a, allocChecks, id[:8])
		out = o
		return code == 0 && strings.Contains(o, "Status    = success"), o + e
	})
	must.StrHasPrefix(t, "Status of 1 Nomad Service Checks\n\n", out)
	for _, want := range []string{"Name      = alive", "Group     = cli-checks.web[0]", "Task      = web",
		"Service   = web", "Mode      = healthiness", "Output    = all good"} {
		must.StrContains(t, out, want)
	}

	code, out, _ = run(t, a, allocChecks, "-json", id)
	must.Eq(t, 0, code)
	var decoded api.AllocCheckStatuses
	must.NoError(t, json.Unmarshal([]byte(out), &decoded))
	must.MapLen(t, 1, decoded)

	code, out, _ = run(t, a, allocChecks, "-t", `{{range .}}{{.Check}}={{.Status}}{{end}}`, id)
	must.Eq(t, 0, code)
	must.EqOp(t, "alive=success\n", out)
}
