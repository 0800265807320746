package command

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/cli"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// varsJobFile writes a job file with variables for count and datacenter
// and returns its directory and path.
func varsJobFile(t *testing.T) (string, string) {
	t.Helper()
	dir := t.TempDir()
	src := `variable "dc" {
  default = "dc1"
}
variable "count" {
  type    = number
  default = 1
}
job "vars" {
  datacenters = [var.dc]
  group "g" {
    count = var.count
    task "t" {
      driver = "mock_driver"
      config {
        run_for = "1s"
      }
    }
  }
}
`
	path := filepath.Join(dir, "vars.nomad.hcl")
	must.NoError(t, os.WriteFile(path, []byte(src), 0o600))
	return dir, path
}

// job run takes -var and -var-file (repeatable) over NOMAD_VAR_ from the
// environment, in upstream's precedence, and refuses an undeclared -var.
func TestJobRun_VarFlags(t *testing.T) {
	dir, path := varsJobFile(t)
	varFile := filepath.Join(dir, "prod.vars.hcl")
	must.NoError(t, os.WriteFile(varFile, []byte("dc = \"edge\"\ncount = 3\n"), 0o600))
	t.Setenv("NOMAD_VAR_dc", "from-env")
	t.Setenv("NOMAD_VAR_count", "2")

	output := func(args ...string) (int, *api.Job, string) {
		ui := cli.NewMockUi()
		code := (&JobRunCommand{Meta: Meta{Ui: ui}}).Run(append([]string{"-output"}, args...))
		var body struct{ Job *api.Job }
		if code == 0 {
			must.NoError(t, json.Unmarshal([]byte(ui.OutputWriter.String()), &body))
		}
		return code, body.Job, ui.ErrorWriter.String()
	}

	code, job, errOut := output(path)
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.Eq(t, []string{"from-env"}, job.Datacenters)
	must.Eq(t, 2, *job.TaskGroups[0].Count)

	code, job, errOut = output("-var-file", varFile, path)
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.Eq(t, []string{"edge"}, job.Datacenters)
	must.Eq(t, 3, *job.TaskGroups[0].Count)

	code, job, errOut = output("-var-file", varFile, "-var", "count=5", "-var=count=6", path)
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.Eq(t, 6, *job.TaskGroups[0].Count)

	code, _, errOut = output("-var", "colour=red", path)
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, `undefined variable "colour" set by -var colour`)

	code, _, errOut = output("-var", "count=many", path)
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, path+`:4:1: invalid value for variable "count" from -var count: the type is number`)
}

// job validate and job plan read the same flags: the job the agent checks
// is the one the variables make.
func TestJobValidatePlan_VarFlags(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	_, path := varsJobFile(t)

	code, out, errOut := run(t, a, jobValidate, "-var", "count=2", path)
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.StrContains(t, out, "Job validation successful")

	code, _, errOut = run(t, a, jobValidate, "-var", "count=x", path)
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, `invalid value for variable "count"`)

	code, out, errOut = run(t, a, func(m Meta) cli.Command { return &JobPlanCommand{Meta: m} }, "-var", "count=4", path)
	must.Eq(t, planChanges, code, must.Sprint(errOut))
	must.StrContains(t, out, "4 create")

	code, _, errOut = run(t, a, func(m Meta) cli.Command { return &JobPlanCommand{Meta: m} }, "-var", "nope=1", path)
	must.Eq(t, planError, code)
	must.StrContains(t, errOut, `undefined variable "nope" set by -var nope`)
}
