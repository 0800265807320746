package template_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/template"
	"github.com/nomad-edge/nomad/client/template/templatetest"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// TestRender_ClientDenylistAndSandbox checks the client's
// function_denylist (a denied function fails the render naming it and
// the setting, upstream's default ones included) and disable_file_sandbox
// (file reads outside the task's directory only when it is set).
func TestRender_ClientDenylistAndSandbox(t *testing.T) {
	src := templatetest.New()
	in := input(src, `{{ env "NOMAD_TASK_NAME" }}`)
	in.Denied = []string{"env"}
	_, err := template.Render(context.Background(), in)
	must.ErrorIs(t, err, template.ErrDeniedFunc)
	must.ErrorContains(t, err, `function "env" is denied by this client's template function_denylist`)

	in = input(src, `{{ writeToFile "x" }}`)
	in.Denied = template.DefaultClientConfig().FunctionDenylist
	_, err = template.Render(context.Background(), in)
	must.ErrorIs(t, err, template.ErrDeniedFunc)

	outside := t.TempDir()
	must.NoError(t, os.WriteFile(filepath.Join(outside, "host.txt"), []byte("host"), 0o600))
	in = input(src, `{{ file "`+filepath.Join(outside, "host.txt")+`" }}`)
	in.TaskDir = t.TempDir()
	_, err = template.Render(context.Background(), in)
	must.ErrorContains(t, err, "outside the task directory")
	in.NoFileSandbox = true
	res, err := template.Render(context.Background(), in)
	must.NoError(t, err)
	must.Eq(t, "host", string(res.Content))
}

// TestClientConfig_WaitFor checks which wait a template renders with: its
// own, else the client's, clamped by the client's wait_bounds, as
// upstream's client settings combine with a job's.
func TestClientConfig_WaitFor(t *testing.T) {
	s := time.Second
	w := func(lo, hi time.Duration) *structs.TemplateWait { return &structs.TemplateWait{Min: lo, Max: hi} }
	cfg := template.ClientConfig{Wait: w(2*s, 10*s)}
	must.Eq(t, *w(2*s, 10*s), cfg.WaitFor(nil))
	must.Eq(t, *w(5*s, 6*s), cfg.WaitFor(w(5*s, 6*s)))
	cfg.WaitBounds = w(3*s, 8*s)
	must.Eq(t, *w(3*s, 8*s), cfg.WaitFor(nil))
	must.Eq(t, *w(8*s, 8*s), cfg.WaitFor(w(20*s, 30*s)))
	must.Eq(t, *w(3*s, 3*s), cfg.WaitFor(w(0, 1*s)))
	must.Eq(t, structs.TemplateWait{}, template.ClientConfig{}.WaitFor(nil))
}
