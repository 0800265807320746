package allocrunner

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/clienttest"
	"github.com/nomad-edge/nomad/client/template/templatetest"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// lastEvent is the first task's newest event of type typ, nil when none.
func lastEvent(ar *AllocRunner, typ string) *structs.TaskEvent {
	return clienttest.LastEvent(ar.tasks[0].State(), typ)
}

// TestTemplateHook_ChangeScript checks change_mode "script" when a
// variable changes under a running task: the script runs in the task's
// directory and the outcome is a task event in upstream's words (a
// success a "Task hook message"; a non-zero exit or a command that cannot
// run a "Task hook failed", the task left running); with fail_on_error a
// failure kills the task, which fails (upstream's "Template script
// failed, task is being killed"), so that its reschedule policy takes
// over. A reload hook that silently failed would leave a task serving
// stale configuration.
func TestTemplateHook_ChangeScript(t *testing.T) {
	for _, tc := range []struct {
		name    string
		script  structs.ChangeScript
		event   string
		message string
		killed  bool
	}{
		{"success", structs.ChangeScript{Command: "/bin/sh", Args: []string{"-c", "echo ran > ran.txt"}},
			structs.TaskHookMessage, `Template successfully ran script /bin/sh with arguments: [-c echo ran > ran.txt]. Exit code: 0`, false},
		{"exit code", structs.ChangeScript{Command: "/bin/sh", Args: []string{"-c", "exit 3"}},
			structs.TaskHookFailed, `Template ran script /bin/sh with arguments [-c exit 3] on change but it exited with code code: 3`, false},
		{"cannot run", structs.ChangeScript{Command: "/nonexistent"},
			structs.TaskHookFailed, `Template failed to run script /nonexistent with arguments [] on change: fork/exec /nonexistent: no such file or directory Exit code: 0`, false},
		{"fail_on_error", structs.ChangeScript{Command: "/bin/sh", Args: []string{"-c", "exit 3"}, FailOnError: true},
			structs.TaskHookFailed, `Template ran script /bin/sh with arguments [-c exit 3] on change but it exited with code code: 3`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src := templatetest.New()
				src.PutVar("nomad/jobs/app", map[string]string{"v": "1"})
				h, _ := templateHarness(t, src)
				cs := tc.script
				a := templateAlloc(&structs.Template{EmbeddedTmpl: `{{ with nomadVar "nomad/jobs/app" }}{{ .v }}{{ end }}`,
					DestPath: "local/v", ChangeMode: structs.TemplateChangeModeScript, ChangeScript: &cs})
				ar := h.runner(t, a)
				go ar.Run()
				defer ar.Destroy()
				h.rec.waitStatus(t, a.ID, structs.AllocClientStatusRunning)
				must.Nil(t, lastEvent(ar, tc.event), must.Sprint("nothing runs at the first render"))

				src.PutVar("nomad/jobs/app", map[string]string{"v": "2"})
				time.Sleep(structs.DefaultTemplateSplay)
				synctest.Wait()
				must.Eq(t, "2", readRendered(t, ar, "local/v"))
				if tc.killed {
					got := h.rec.waitStatus(t, a.ID, structs.AllocClientStatusFailed)
					st := got.TaskStates[a.Job.TaskGroups[0].Tasks[0].Name]
					must.True(t, st.Failed)
					k := lastEvent(ar, structs.TaskKilling)
					must.NotNil(t, k)
					must.Eq(t, "Template script failed, task is being killed", k.DisplayMessage)
					must.True(t, k.FailsTask)
				} else {
					must.Eq(t, structs.TaskStateRunning, ar.tasks[0].State().State, must.Sprint("the task keeps running"))
					must.Eq(t, 0, restarts(ar))
				}
				e := lastEvent(ar, tc.event)
				must.NotNil(t, e, must.Sprintf("events: %+v", ar.tasks[0].State().Events))
				must.Eq(t, tc.message, e.DisplayMessage)
				if tc.name == "success" {
					b, err := os.ReadFile(filepath.Join(ar.tasks[0].dir.Dir, "ran.txt"))
					must.NoError(t, err, must.Sprint("the script ran in the task's directory"))
					must.Eq(t, "ran\n", string(b))
				}
			})
		})
	}
}

// TestWriteRendered_Owner checks template uid and gid: the rendered file
// belongs to them (what a task running as another user needs to read a
// 0600 secret), -1 keeps the client's, and a chown the client may not do
// fails the render naming the IDs rather than leaving a file the task
// cannot read.
func TestWriteRendered_Owner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown to another user needs root")
	}
	dir := t.TempDir()
	dst := filepath.Join(dir, "secret")
	must.NoError(t, writeRendered(dst, &structs.Template{Perms: "0600", Uid: new(65534), Gid: new(-1)}, []byte("x")))
	fi, err := os.Stat(dst)
	must.NoError(t, err)
	st := fi.Sys().(*syscall.Stat_t)
	must.Eq(t, uint32(65534), st.Uid)
	must.Eq(t, uint32(os.Getegid()), st.Gid, must.Sprint("-1 keeps the client's group"))
	must.Eq(t, os.FileMode(0o600), fi.Mode().Perm())

	must.NoError(t, writeRendered(dst, &structs.Template{Perms: "0644"}, []byte("y")))
	fi, err = os.Stat(dst)
	must.NoError(t, err)
	must.Eq(t, uint32(0), fi.Sys().(*syscall.Stat_t).Uid, must.Sprint("no uid: the client's"))
}
