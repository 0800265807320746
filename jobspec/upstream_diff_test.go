package jobspec_test

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/jobspec"
)

// upstreamNomad unpacks the upstream 1.6.5 binary from ../shared/tools
// into a temp dir, or skips the test when the file is absent (a clone
// without shared/).
func upstreamNomad(t *testing.T) string {
	t.Helper()
	gz, err := os.Open(filepath.Join("..", "..", "shared", "tools", "nomad-1.6.5.gz"))
	if err != nil {
		t.Skipf("upstream binary not available: %v", err)
	}
	defer gz.Close()
	r, err := gzip.NewReader(gz)
	must.NoError(t, err)
	bin := filepath.Join(t.TempDir(), "nomad-1.6.5")
	out, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	must.NoError(t, err)
	_, err = io.Copy(out, r)
	must.NoError(t, err)
	must.NoError(t, out.Close())
	return bin
}

// The same HCL2 file with the same -var, -var-file and NOMAD_VAR_ inputs
// gives the job upstream 1.6.5's parser gives (`job run -output`): values
// in the same precedence, locals, functions, dynamic blocks and the client
// interpolations left in place.
func TestParse_VariablesMatchUpstream(t *testing.T) {
	bin := upstreamNomad(t)
	dir := t.TempDir()
	job := `
variable "dcs" {
  type    = list(string)
  default = ["dc1"]
}
variable "count" {
  type    = number
  default = 1
}
variable "ports" {
  type    = map(number)
  default = { http = 8080 }
}
variable "image" {
  type = string
}
locals {
  name = "${upper(var.image)}-${length(var.dcs)}"
  conf = "${NOMAD_TASK_DIR}/${var.image}.conf"
}
job "diff" {
  datacenters = var.dcs
  meta = {
    name   = local.name
    joined = join(",", [for d in var.dcs : title(d)])
    host   = "${attr.unique.hostname}"
    sub    = cidrsubnet("10.0.0.0/16", 8, var.count)
  }
  dynamic "constraint" {
    for_each = var.dcs
    content {
      attribute = "${node.datacenter}"
      operator  = "!="
      value     = "${constraint.value}-old"
    }
  }
  group "g" {
    count = var.count * 2
    network {
      dynamic "port" {
        for_each = var.ports
        labels   = [port.key]
        content {
          to = port.value
        }
      }
    }
    task "t" {
      driver = "raw_exec"
      config {
        command = local.conf
        args    = [upper("${NOMAD_META_x}"), "${var.image}"]
      }
    }
  }
}
`
	path := filepath.Join(dir, "diff.nomad.hcl")
	must.NoError(t, os.WriteFile(path, []byte(job), 0o600))
	varFile := filepath.Join(dir, "v.json")
	must.NoError(t, os.WriteFile(varFile, []byte(`{"count": 2, "ports": {"http": 80, "admin": 9000}}`), 0o600))
	env := []string{"NOMAD_VAR_image=cache", "NOMAD_VAR_count=7"}
	args := []string{"-var", `dcs=["edge-a","edge-b"]`, "-var-file", varFile}

	cmd := exec.Command(bin, append(append([]string{"job", "run", "-output"}, args...), path)...)
	cmd.Env = append(os.Environ(), env...)
	raw, err := cmd.Output()
	must.NoError(t, err, must.Sprintf("upstream: %s", raw))
	var theirs struct{ Job nomadapi.Job }
	must.NoError(t, json.Unmarshal(raw, &theirs))

	ours, err := jobspec.ParseFileWithOptions(path, jobspec.Options{
		ArgVars: []string{`dcs=["edge-a","edge-b"]`}, VarFiles: []string{varFile}, Env: env,
	})
	must.NoError(t, err)

	must.Eq(t, theirs.Job.Datacenters, ours.Datacenters)
	must.Eq(t, theirs.Job.Meta, ours.Meta)
	must.Eq(t, len(theirs.Job.Constraints), len(ours.Constraints))
	for i, c := range theirs.Job.Constraints {
		must.Eq(t, c.LTarget, ours.Constraints[i].LTarget)
		must.Eq(t, c.Operand, ours.Constraints[i].Operand)
		must.Eq(t, c.RTarget, ours.Constraints[i].RTarget)
	}
	tg, og := theirs.Job.TaskGroups[0], ours.TaskGroups[0]
	must.Eq(t, *tg.Count, *og.Count)
	must.Eq(t, len(tg.Networks[0].DynamicPorts), len(og.Networks[0].DynamicPorts))
	for i, p := range tg.Networks[0].DynamicPorts {
		must.Eq(t, p.Label, og.Networks[0].DynamicPorts[i].Label)
		must.Eq(t, p.To, og.Networks[0].DynamicPorts[i].To)
	}
	theirCfg, err := json.Marshal(tg.Tasks[0].Config)
	must.NoError(t, err)
	ourCfg, err := json.Marshal(og.Tasks[0].Config)
	must.NoError(t, err)
	must.Eq(t, string(theirCfg), string(ourCfg))
}
