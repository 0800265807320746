package structs_test

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// TestTemplate_Validate checks the server's template checks for jobs
// submitted as JSON (the parser makes the same at file:line:column): one
// of source and data, a destination inside the allocation directory, a
// known change_mode with its signal, octal perms, unique destinations.
func TestTemplate_Validate(t *testing.T) {
	j := mock.Job()
	task := j.TaskGroups[0].Tasks[0]
	task.Templates = []*structs.Template{{EmbeddedTmpl: "x", DestPath: "local/a"}, {SourcePath: "local/in", DestPath: "../alloc/b"}}
	j.Canonicalize()
	must.NoError(t, j.Validate())
	must.Eq(t, structs.TemplateChangeModeRestart, task.Templates[0].ChangeMode)

	task.Templates = []*structs.Template{
		{DestPath: "local/a"},
		{EmbeddedTmpl: "x", DestPath: "../../etc/passwd", ChangeMode: "signal", Perms: "rw"},
		{EmbeddedTmpl: "x", DestPath: "local/a", ChangeMode: "script"},
	}
	err := j.Validate()
	for _, want := range []string{
		"Template 1 validation failed: template must have one of source or data",
		`template destination "../../etc/passwd" escapes the allocation directory`,
		`template change_mode "signal" must have a change_signal`,
		`template perms "rw" is not an octal file mode`,
		`template change_mode "script" must have a change_script with a command`,
		`Template 3: destination "local/a" is also another template's`,
	} {
		must.ErrorContains(t, err, want)
	}
}
