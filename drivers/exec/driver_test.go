//go:build linux

package exec

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/drivers"
)

// testTimeout bounds every wait; hitting it means a lost exit.
const testTimeout = 20 * time.Second

// needIsolation skips a test on a host where the driver cannot work, saying
// why: these tests start real isolated processes.
func needIsolation(t *testing.T) {
	t.Helper()
	if v, reason := checkHost(); v == 0 {
		t.Skipf("exec driver tests need root, namespaces and cgroups: %s", reason)
	}
}

func newTestDriver(t *testing.T, cfg map[string]any) *Driver {
	t.Helper()
	d, err := New(drivers.Options{Config: cfg})
	must.NoError(t, err)
	t.Cleanup(func() {
		for _, id := range d.tasks.IDs() {
			_ = d.DestroyTask(id, true)
		}
	})
	return d
}

// newTaskConfig lays out an allocation dir the way the client does, under a
// directory the task user can traverse (t.TempDir is 0700).
func newTaskConfig(t *testing.T, command string, args ...string) *drivers.TaskConfig {
	t.Helper()
	dir := t.TempDir()
	must.NoError(t, os.Chmod(dir, 0o755))
	alloc := filepath.Join(dir, "alloc1")
	shared := filepath.Join(alloc, "alloc")
	task := filepath.Join(alloc, "web")
	for _, p := range []string{shared, filepath.Join(shared, "logs"), filepath.Join(task, "local"), filepath.Join(task, "secrets")} {
		must.NoError(t, os.MkdirAll(p, 0o755))
	}
	id := "alloc1-" + strings.ReplaceAll(t.Name(), "/", "-")
	return &drivers.TaskConfig{
		ID:         id + "/web",
		Name:       "web",
		AllocID:    id,
		TaskDir:    task,
		LocalDir:   filepath.Join(task, "local"),
		SecretsDir: filepath.Join(task, "secrets"),
		AllocDir:   shared,
		StdoutPath: filepath.Join(shared, "logs", "web.stdout.0"),
		StderrPath: filepath.Join(shared, "logs", "web.stderr.0"),
		Config:     map[string]any{"command": command, "args": toAny(args)},
	}
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func waitExit(t *testing.T, d drivers.Driver, id string) *drivers.ExitResult {
	t.Helper()
	ch, err := d.WaitTask(context.Background(), id)
	must.NoError(t, err)
	select {
	case res, ok := <-ch:
		must.True(t, ok, must.Sprint("wait channel closed without a result"))
		return res
	case <-time.After(testTimeout):
		t.Fatalf("task %s did not exit within %s", id, testTimeout)
		return nil
	}
}

// runScript runs a shell script as an exec task to completion and returns
// its result and stdout.
func runScript(t *testing.T, d *Driver, cfg *drivers.TaskConfig) (*drivers.ExitResult, string) {
	t.Helper()
	_, err := d.StartTask(cfg)
	must.NoError(t, err)
	res := waitExit(t, d, cfg.ID)
	out, err := os.ReadFile(cfg.StdoutPath)
	must.NoError(t, err)
	if !res.Successful() {
		stderr, _ := os.ReadFile(cfg.StderrPath)
		t.Logf("task stderr: %s", stderr)
	}
	return res, string(out)
}

// A task's exit code and output reach the client, from inside its chroot.
func TestStartTask_ExitCodeAndOutput(t *testing.T) {
	needIsolation(t)
	d := newTestDriver(t, nil)
	cfg := newTaskConfig(t, "/bin/sh", "-c", "echo hello; exit 3")
	res, out := runScript(t, d, cfg)
	must.Eq(t, 3, res.ExitCode)
	must.Eq(t, "hello\n", out)
}
