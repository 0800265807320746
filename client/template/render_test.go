package template_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/template"
	"github.com/nomad-edge/nomad/client/template/templatetest"
	"github.com/nomad-edge/nomad/nomad/structs"
)

func input(src template.Source, text string) template.Input {
	return template.Input{Name: "template \"local/x\"", Text: text, LeftDelim: "{{", RightDelim: "}}", Source: src,
		Env: map[string]string{"NOMAD_TASK_NAME": "web"}}
}

// TestRender_Functions checks the functions a job file's templates use
// against an in-memory source: variables, services, env and the string
// helpers render as upstream's do.
func TestRender_Functions(t *testing.T) {
	src := templatetest.New()
	src.PutVar("nomad/jobs/app", map[string]string{"user": "admin", "pass": "s3cret"})
	src.PutVar("nomad/jobs/app/web", map[string]string{"port": "8080"})
	src.PutService("db", &structs.ServiceRegistration{ServiceName: "db", Address: "10.0.0.5", Port: 5432, Tags: []string{"primary"}})
	text := `{{ with nomadVar "nomad/jobs/app" }}user={{ .user }} pass={{ .pass }}{{ end }}
{{ range nomadVarList "nomad/jobs/app" }}{{ .Path }};{{ end }}
exists={{ nomadVarExists "nomad/jobs/app/web" }} missing={{ nomadVarExists "nomad/jobs/none" }}
{{ range nomadService "db" }}db={{ .Address }}:{{ .Port }} {{ join "," .Tags }}{{ end }}
{{ range nomadServices }}svc={{ .Name }}{{ end }}
task={{ env "NOMAD_TASK_NAME" }} {{ toUpper "a" }}{{ toLower "B" }} {{ "a-b" | split "-" | join "+" }} {{ replaceAll "x" "y" "xox" }} [{{ trimSpace "  t " }}]
{{ base64Encode "hi" }} {{ base64Decode "aGk=" }} {{ toJSON (parseJSON "{\"k\":1}") }}`
	res, err := template.Render(context.Background(), input(src, text))
	must.NoError(t, err)
	must.Eq(t, `user=admin pass=s3cret
nomad/jobs/app;nomad/jobs/app/web;
exists=true missing=false
db=10.0.0.5:5432 primary
svc=db
task=web Ab a+b yoy [t]
aGk= hi {"k":1}`, string(res.Content))
	must.MapLen(t, 6, res.Deps)
}

// TestRender_Delimiters checks left_delimiter/right_delimiter and
// error_on_missing_key, which change how the text is read.
func TestRender_Delimiters(t *testing.T) {
	src := templatetest.New()
	src.PutVar("v", map[string]string{"a": "1"})
	in := input(src, `{{ literal }} [[ with nomadVar "v" ]][[ .a ]][[ .b ]][[ end ]]`)
	in.LeftDelim, in.RightDelim = "[[", "]]"
	res, err := template.Render(context.Background(), in)
	must.NoError(t, err)
	must.Eq(t, "{{ literal }} 1<no value>", string(res.Content), must.Sprint("a missing key prints <no value>, as upstream"))

	in.ErrMissingKey = true
	_, err = template.Render(context.Background(), in)
	must.ErrorContains(t, err, `map has no entry for key "b"`)
}

// TestRender_Refusals checks that Consul and Vault functions fail naming
// the function, that a missing variable is ErrMissingVar (the template
// waits for it, as upstream's does), and that file stays in the task
// directory.
func TestRender_Refusals(t *testing.T) {
	src := templatetest.New()
	for fn, call := range map[string]string{"key": `key "a"`, "service": `service "db"`, "secret": `secret "kv/x"`} {
		_, err := template.Render(context.Background(), input(src, "{{ "+call+" }}"))
		must.ErrorIs(t, err, template.ErrRefusedFunc)
		must.ErrorContains(t, err, `function "`+fn+`" is not supported`)
	}
	res, err := template.Render(context.Background(), input(src, `{{ with nomadVar "nomad/jobs/x" }}{{ end }}`))
	must.ErrorIs(t, err, template.ErrMissingVar)
	must.MapLen(t, 1, res.Deps, must.Sprint("a missing variable is still watched"))

	dir := t.TempDir()
	must.NoError(t, os.WriteFile(filepath.Join(dir, "in.txt"), []byte("inside"), 0o600))
	in := input(src, `{{ file "in.txt" }}`)
	in.TaskDir = dir
	res, err = template.Render(context.Background(), in)
	must.NoError(t, err)
	must.Eq(t, "inside", string(res.Content))
	in.Text = `{{ file "../../etc/passwd" }}`
	_, err = template.Render(context.Background(), in)
	must.ErrorContains(t, err, "outside the task directory")
}

// TestWatch_WakesOnChange checks that Watch returns once a variable a
// render read changes, and fails when the source does, since the hook
// re-renders on the first and keeps the content on the second.
func TestWatch_WakesOnChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := templatetest.New()
		src.PutVar("v", map[string]string{"a": "1"})
		res, err := template.Render(context.Background(), input(src, `{{ with nomadVar "v" }}{{ .a }}{{ end }}`))
		must.NoError(t, err)
		done := make(chan error, 1)
		go func() { done <- template.Watch(context.Background(), src, res.Deps) }()
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("Watch returned before any change")
		default:
		}
		src.PutVar("v", map[string]string{"a": "2"})
		must.NoError(t, <-done)

		boom := errors.New("no servers")
		go func() {
			done <- template.Watch(context.Background(), src, map[template.Dep]uint64{{Kind: "var", Arg: "v"}: 100})
		}()
		synctest.Wait()
		src.SetDown(boom)
		must.ErrorIs(t, <-done, boom)
	})
}
