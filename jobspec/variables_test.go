package jobspec_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/jobspec"
)

// varsJob declares one variable of each kind and uses them in the job.
const varsJob = `
variable "dc" {
  type    = string
  default = "dc1"
}
variable "count" {
  type    = number
  default = 1
  validation {
    condition     = var.count > 0
    error_message = "The count must be positive."
  }
}
variable "dcs" {
  type    = list(string)
  default = []
}
job "web" {
  datacenters = concat([var.dc], var.dcs)
  group "g" {
    count = var.count
    task "t" {
      driver = "mock_driver"
    }
  }
}
`

// parseOpts parses src as file x.hcl with opts.
func parseOpts(t *testing.T, src string, opts jobspec.Options) (*api.Job, error) {
	t.Helper()
	return jobspec.ParseWithOptions("x.hcl", []byte(src), opts)
}

// errLines returns the lines of a *ParseError.
func errLines(t *testing.T, err error) []string {
	t.Helper()
	must.Error(t, err)
	var pe *jobspec.ParseError
	must.True(t, errors.As(err, &pe), must.Sprint("error must be a *ParseError"))
	return strings.Split(err.Error(), "\n")
}

// writeFile writes content to name in dir and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	must.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

// Values win in upstream's order, defaults < NOMAD_VAR_ < var files (in
// order) < -var flags (last wins), so a CI pipeline can layer them.
func TestVariables_Precedence(t *testing.T) {
	dir := t.TempDir()
	hclFile := writeFile(t, dir, "a.vars.hcl", "dc = \"from-hcl-file\"\ncount = 3\n")
	jsonFile := writeFile(t, dir, "b.json", `{"count": 4}`)
	cases := []struct {
		name      string
		opts      jobspec.Options
		wantDC    string
		wantCount int
	}{
		{"defaults", jobspec.Options{}, "dc1", 1},
		{"environment over default", jobspec.Options{Env: []string{"NOMAD_VAR_dc=from-env", "NOMAD_VAR_count=2", "PATH=/bin"}}, "from-env", 2},
		{"var file over environment", jobspec.Options{Env: []string{"NOMAD_VAR_dc=from-env"}, VarFiles: []string{hclFile}}, "from-hcl-file", 3},
		{"later var file wins, json read", jobspec.Options{VarFiles: []string{hclFile, jsonFile}}, "from-hcl-file", 4},
		{"inline content after files", jobspec.Options{VarFiles: []string{jsonFile}, VarContent: "count = 6\n"}, "dc1", 6},
		{"-var over var file", jobspec.Options{VarFiles: []string{hclFile}, ArgVars: []string{"count=5", "dc=from-flag"}}, "from-flag", 5},
		{"last -var wins", jobspec.Options{ArgVars: []string{"count=5", "count=7"}}, "dc1", 7},
		{"undeclared environment names are ignored", jobspec.Options{Env: []string{"NOMAD_VAR_other=1"}}, "dc1", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job, err := parseOpts(t, varsJob, tc.opts)
			must.NoError(t, err)
			must.Eq(t, []string{tc.wantDC}, job.Datacenters)
			must.Eq(t, tc.wantCount, *job.TaskGroups[0].Count)
		})
	}
}

// A -var of a collection type is read as an HCL expression, as upstream,
// and a var file's value is converted to the declared type.
func TestVariables_CollectionFromFlag(t *testing.T) {
	job, err := parseOpts(t, varsJob, jobspec.Options{ArgVars: []string{`dcs=["dc2","dc3"]`}})
	must.NoError(t, err)
	must.Eq(t, []string{"dc1", "dc2", "dc3"}, job.Datacenters)
}

// Every way a variable can be wrong is an error at a position, naming
// the variable and where its value came from: an operator must see which
// flag or file to fix.
func TestVariables_Errors(t *testing.T) {
	dir := t.TempDir()
	badFile := writeFile(t, dir, "bad.hcl", "count = \"many\"\n")
	unknownFile := writeFile(t, dir, "unknown.hcl", "\ncolour = \"red\"\n")
	cases := []struct {
		name string
		src  string
		opts jobspec.Options
		want []string
	}{
		{"unknown -var name", varsJob, jobspec.Options{ArgVars: []string{"colour=red"}},
			[]string{`undefined variable "colour" set by -var colour; declare it in the job file: variable "colour" { ... }`}},
		{"unknown name in a var file", varsJob, jobspec.Options{VarFiles: []string{unknownFile}},
			[]string{unknownFile + `:2:1: undefined variable "colour" set by ` + unknownFile + `; declare it in the job file: variable "colour" { ... }`}},
		{"malformed -var", varsJob, jobspec.Options{ArgVars: []string{"count"}},
			[]string{`invalid -var "count": write it as name=value`}},
		{"wrong type from a flag", varsJob, jobspec.Options{ArgVars: []string{"count=many"}},
			[]string{`x.hcl:6:1: invalid value for variable "count" from -var count: the type is number: a number is required`}},
		{"wrong type from the environment", varsJob, jobspec.Options{Env: []string{"NOMAD_VAR_count=many"}},
			[]string{`x.hcl:6:1: invalid value for variable "count" from the NOMAD_VAR_count environment variable: the type is number: a number is required`}},
		{"wrong type in a var file", varsJob, jobspec.Options{VarFiles: []string{badFile}},
			[]string{badFile + `:1:9: invalid value for variable "count" from ` + badFile + `: the type is number: a number is required`}},
		{"wrong type of default", "variable \"n\" {\n  type = number\n  default = \"x\"\n}\njob \"a\" {}\n", jobspec.Options{},
			[]string{`x.hcl:3:13: invalid value for variable "n" from its default: the type is number: a number is required`}},
		{"failed validation", varsJob, jobspec.Options{ArgVars: []string{"count=0"}},
			[]string{`x.hcl:6:1: invalid value for variable "count" from -var count: The count must be positive. (the validation rule at x.hcl:9:3)`}},
		{"failed validation in a var file", varsJob, jobspec.Options{VarContent: "count = -1\n"},
			[]string{`<Variables>:1:9: invalid value for variable "count" from <Variables>: The count must be positive. (the validation rule at x.hcl:9:3)`}},
		{"missing required value", "variable \"image\" {\n  type = string\n}\njob \"a\" {\n  meta = { image = var.image }\n}\n", jobspec.Options{},
			[]string{`x.hcl:1:1: variable "image" has no value: give it a default, or set it with -var image=..., a -var-file, or the NOMAD_VAR_image environment variable`}},
		{"undefined variable in a job", "job \"a\" {\n  group \"g\" {\n    count = var.n + 1\n  }\n}\n", jobspec.Options{},
			[]string{`x.hcl:3:13: undefined variable "n": declare it in the job file: variable "n" { ... }`}},
		{"undefined variable in a string", "job \"a\" {\n  region = \"eu-${var.zone}\"\n}\n", jobspec.Options{},
			[]string{`x.hcl:2:18: undefined variable "zone": declare it in the job file: variable "zone" { ... }`}},
		{"undefined local", "job \"a\" {\n  region = local.r\n}\n", jobspec.Options{},
			[]string{`x.hcl:2:12: undefined local "r": no locals block sets it`}},
		{"unknown function", "job \"a\" {\n  region = lowerr(\"EU\")\n}\n", jobspec.Options{},
			[]string{`x.hcl:2:12: Call to unknown function; There is no function named "lowerr". Did you mean "lower"?`}},
		{"function argument of the wrong type", "job \"a\" {\n  region = upper([])\n}\n", jobspec.Options{},
			[]string{`x.hcl:2:18: Invalid function argument; Invalid value for "str" parameter: string required, but have tuple.`}},
		{"invalid type expression", "variable \"n\" {\n  type = strin\n}\njob \"a\" {}\n", jobspec.Options{},
			[]string{`x.hcl:1:1: variable "n" has no value: give it a default, or set it with -var n=..., a -var-file, or the NOMAD_VAR_n environment variable`,
				`x.hcl:2:10: Invalid type specification; The keyword "strin" is not a valid type specification.`}},
		{"error message not a sentence", "variable \"n\" {\n  default = 1\n  validation {\n    condition = var.n > 0\n    error_message = \"must be positive\"\n  }\n}\njob \"a\" {}\n", jobspec.Options{},
			[]string{`x.hcl:5:21: invalid error_message in validation block of variable "n": write one or more full sentences, starting with a capital letter and ending with a period or a question mark`}},
		{"duplicate variable", "variable \"n\" {\n  default = 1\n}\nvariable \"n\" {\n  default = 2\n}\njob \"a\" {}\n", jobspec.Options{},
			[]string{`x.hcl:4:10: duplicate variable "n"; the first is at x.hcl:1:1`}},
		{"reference in a default", "variable \"a\" {\n  default = \"x\"\n}\nvariable \"b\" {\n  default = var.a\n}\njob \"a\" {}\n", jobspec.Options{},
			[]string{`x.hcl:5:13: invalid default for variable "b": a default is a literal value (no references or function calls)`}},
		{"dynamic block in a declaration", "variable \"n\" {\n  default = 1\n  dynamic \"validation\" {\n    for_each = [1]\n    content {}\n  }\n}\njob \"a\" {}\n", jobspec.Options{},
			[]string{`x.hcl:3:3: unsupported block "dynamic" in variable "n"`}},
		{"unknown attribute in variable", "variable \"n\" {\n  default = 1\n  nullable = true\n}\njob \"a\" {}\n", jobspec.Options{},
			[]string{`x.hcl:3:3: unsupported attribute "nullable" in variable "n"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job, err := parseOpts(t, tc.src, tc.opts)
			must.Nil(t, job)
			must.Eq(t, tc.want, errLines(t, err))
		})
	}
}

// Locals may use variables, functions and each other in any order of
// writing; a cycle is reported at the local that closes it.
func TestLocals(t *testing.T) {
	src := `
locals {
  image = "${local.repo}/app:${var.tag}"
}
variable "tag" {
  default = "1.2"
}
locals {
  repo  = lower("REGISTRY.local")
  where = "${attr.unique.hostname}-x"
}
job "a" {
  meta = {
    image = local.image
    where = local.where
  }
}
`
	job, err := parseOpts(t, src, jobspec.Options{})
	must.NoError(t, err)
	must.Eq(t, map[string]string{"image": "registry.local/app:1.2", "where": "${attr.unique.hostname}-x"}, job.Meta)

	cyc := "locals {\n  a = local.b\n  b = \"${local.c}x\"\n  c = local.a\n}\njob \"a\" {\n  region = local.a\n}\n"
	_, err = parseOpts(t, cyc, jobspec.Options{})
	must.Eq(t, []string{`x.hcl:2:3: local "a" refers to itself: local.a -> local.b -> local.c -> local.a`}, errLines(t, err))
}

// A sensitive variable's value never appears in a message, even where the
// message would otherwise quote the value.
func TestVariables_Sensitive(t *testing.T) {
	src := `
variable "timeout" {
  type      = string
  sensitive = true
  validation {
    condition     = length(var.timeout) > 1
    error_message = "Timeout ${var.timeout} is too short."
  }
}
job "a" {
  group "g" {
    restart {
      delay = var.timeout
    }
  }
}
`
	_, err := parseOpts(t, src, jobspec.Options{ArgVars: []string{"timeout=hunter2"}})
	lines := errLines(t, err)
	must.Eq(t, []string{`x.hcl:13:15: invalid duration for "delay" in restart block of group "g": (sensitive value) is not a duration such as "30s" or "1h"`}, lines)
	must.StrNotContains(t, err.Error(), "hunter2")

	_, err = parseOpts(t, src, jobspec.Options{ArgVars: []string{"timeout=s"}})
	must.Eq(t, []string{`x.hcl:2:1: invalid value for variable "timeout" from -var timeout: (sensitive value) (the validation rule at x.hcl:5:3)`}, errLines(t, err))

	// The value itself reaches the job unchanged.
	job, err := parseOpts(t, src, jobspec.Options{ArgVars: []string{"timeout=15s"}})
	must.NoError(t, err)
	must.Eq(t, "15s", job.TaskGroups[0].RestartPolicy.Delay.String())
}

// Runtime interpolations (attr., node., meta., NOMAD_*) keep passing
// through verbatim next to var and local references, inside functions
// too, as upstream: the client resolves them on the node.
func TestVariables_RuntimeInterpolationsPassThrough(t *testing.T) {
	src := `
variable "file" {
  default = "app.conf"
}
job "a" {
  constraint {
    attribute = "${attr.kernel.name}"
    value     = "linux"
  }
  group "g" {
    task "t" {
      driver = "mock_driver"
      config {
        path  = "${NOMAD_TASK_DIR}/${var.file}"
        upper = upper("${NOMAD_META_x}")
        pick  = var.file == "" ? "none" : "${node.unique.name}/${meta.rack}"
        args  = [for a in ["x", "y"] : "${NOMAD_ALLOC_DIR}/${a}"]
      }
    }
  }
}
`
	job, err := parseOpts(t, src, jobspec.Options{})
	must.NoError(t, err)
	must.Eq(t, "${attr.kernel.name}", job.Constraints[0].LTarget)
	cfg := job.TaskGroups[0].Tasks[0].Config
	must.Eq(t, "${NOMAD_TASK_DIR}/app.conf", cfg["path"])
	must.Eq(t, "${NOMAD_META_X}", cfg["upper"])
	must.Eq(t, "${node.unique.name}/${meta.rack}", cfg["pick"])
	must.Eq[any](t, []any{"${NOMAD_ALLOC_DIR}/x", "${NOMAD_ALLOC_DIR}/y"}, cfg["args"])
}

// The short `variables { }` form declares untyped variables with defaults.
func TestVariables_ShortForm(t *testing.T) {
	src := "variables {\n  dc = \"dc9\"\n}\njob \"a\" {\n  datacenters = [var.dc]\n}\n"
	job, err := parseOpts(t, src, jobspec.Options{})
	must.NoError(t, err)
	must.Eq(t, []string{"dc9"}, job.Datacenters)
	job, err = parseOpts(t, src, jobspec.Options{ArgVars: []string{"dc=dc2"}})
	must.NoError(t, err)
	must.Eq(t, []string{"dc2"}, job.Datacenters)
}
