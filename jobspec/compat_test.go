package jobspec_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/jobspec"
)

// validSamples are the testdata files that must parse.
var validSamples = []string{"full.nomad.hcl", "minimal.nomad.hcl", "job_disconnect.nomad.hcl"}

// What the parser produces, canonicalized as the CLI or agent would, is a
// job the official client library decodes field for field: no field name
// it does not know, no type it cannot read.
func TestParse_OutputDecodesIntoOfficialJob(t *testing.T) {
	for _, name := range validSamples {
		t.Run(name, func(t *testing.T) {
			job, err := jobspec.ParseFile(testdata(name))
			must.NoError(t, err)
			job.Canonicalize()
			data, err := json.Marshal(job)
			must.NoError(t, err)

			dec := json.NewDecoder(bytes.NewReader(data))
			dec.DisallowUnknownFields()
			var theirs nomadapi.Job
			must.NoError(t, dec.Decode(&theirs))
			must.Eq(t, *job.ID, *theirs.ID)
			must.Eq(t, len(job.TaskGroups), len(theirs.TaskGroups))
		})
	}
}

// Whatever bytes it is given, Parse returns a job or a *ParseError; it
// never panics. The agent's /v1/jobs/parse endpoint feeds it user input.
func FuzzParse(f *testing.F) {
	entries, err := os.ReadDir("testdata")
	must.NoError(f, err)
	for _, e := range entries {
		if e.IsDir() { // testdata/fuzz holds the corpus
			continue
		}
		src, err := os.ReadFile(filepath.Join("testdata", e.Name()))
		must.NoError(f, err)
		f.Add(src)
	}
	// What once overflowed the parser's stack, and what a nesting scan
	// could get wrong: brackets in text, templates, heredocs, operators.
	for _, s := range []string{
		strings.Repeat("(", 500), "x = " + strings.Repeat("!", 500) + "x", `x = "${"${"${1}"}"}"`,
		"x = <<EOT\n${ [ { a = (1) } ] }\nEOT\n", `x = "%{ if a }%{ for b in c }${b}%{ endfor }%{ endif }"`,
		`job "j" { group "g" { task "t" { config { a { b { c = [[[1]]] } } } } } }`,
		"/* ( */ # [\n// {\nx = 1 ? 2 : 3 ? 4 : -5",
		// Variables, locals, functions and dynamic blocks: marks, unknown
		// values and generated blocks are where a panic would hide.
		"variable \"s\" {\n  type = list(string)\n  default = [\"a\"]\n  sensitive = true\n}\nlocals {\n  l = [for x in var.s : upper(x)]\n}\n" +
			"job \"j\" {\n  meta = { a = join(\",\", local.l) }\n  dynamic \"constraint\" {\n    for_each = var.s\n    content {\n      attribute = \"${attr.x}\"\n      value = constraint.value\n    }\n  }\n}\n",
		"variable \"n\" {\n  type = number\n  default = 2\n  validation {\n    condition = var.n > 1\n    error_message = \"Too small.\"\n  }\n}\njob \"j\" {\n  group \"g\" {\n    count = var.n\n    network {\n      dynamic \"port\" {\n        for_each = range(var.n)\n        labels = [\"p${port.key}\"]\n        content { to = port.value }\n      }\n    }\n  }\n}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		job, err := jobspec.Parse("fuzz.hcl", src)
		if err != nil {
			var pe *jobspec.ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error is %T, want *ParseError: %v", err, err)
			}
			return
		}
		if job == nil || job.ID == nil {
			t.Fatalf("nil job or ID without error")
		}
	})
}
