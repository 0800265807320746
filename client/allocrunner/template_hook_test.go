package allocrunner

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/state"
	"github.com/nomad-edge/nomad/client/template"
	"github.com/nomad-edge/nomad/client/template/templatetest"
	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// fixedSources hands every task the same source, and cfg (upstream's
// defaults when nil).
type fixedSources struct {
	src template.Source
	cfg *template.ClientConfig
}

func (f fixedSources) Source(string, func() string) template.Source { return f.src }

func (f fixedSources) Config() template.ClientConfig {
	if f.cfg == nil {
		return template.DefaultClientConfig()
	}
	return *f.cfg
}

// signalingDriver is the mock driver with signals recorded.
type signalingDriver struct {
	*mock.Driver
	mu      sync.Mutex
	signals []string
}

func (d *signalingDriver) SignalTask(_, sig string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.signals = append(d.signals, sig)
	return nil
}

func (d *signalingDriver) got() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.signals...)
}

var _ drivers.Signaler = (*signalingDriver)(nil)

// templateHarness is a harness whose tasks read src, with a signalling
// mock driver and an identity signer.
func templateHarness(t *testing.T, src template.Source) (*harness, *signalingDriver) {
	h := newHarness(t)
	d := &signalingDriver{Driver: h.drivers[mock.Name].(*mock.Driver)}
	h.drivers[mock.Name] = d
	h.identities = &fakeSigner{ttl: time.Hour}
	h.templates = fixedSources{src: src}
	return h, d
}

func templateAlloc(tmpls ...*structs.Template) *structs.Allocation {
	a := identityAlloc(nil)
	for _, t := range tmpls {
		t.Canonicalize()
	}
	a.Job.TaskGroups[0].Tasks[0].Templates = tmpls
	return a
}

func readRendered(t *testing.T, ar *AllocRunner, dest string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(ar.tasks[0].dir.Dir, dest))
	must.NoError(t, err)
	return string(b)
}

func restarts(ar *AllocRunner) int {
	return int(ar.tasks[0].State().Restarts)
}

// TestTemplateHook_RendersBeforeStartAndEnv checks that templates are
// rendered before the task starts (file with its perms, env = true
// variables in the task's environment), and that a template reading a
// variable that does not exist yet holds the start until it exists, as
// upstream's does.
func TestTemplateHook_RendersBeforeStartAndEnv(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := templatetest.New()
		h, _ := templateHarness(t, src)
		a := templateAlloc(
			&structs.Template{EmbeddedTmpl: `{{ with nomadVar "nomad/jobs/app" }}port={{ .port }}{{ end }}`, DestPath: "local/app.conf", Perms: "0600"},
			&structs.Template{EmbeddedTmpl: `{{ with nomadVar "nomad/jobs/app" }}APP_PORT={{ .port }}{{ end }}`, DestPath: "secrets/app.env", Envvars: true},
		)
		ar := h.runner(t, a)
		go ar.Run()
		defer ar.Destroy()
		synctest.Wait()
		must.Eq(t, structs.TaskStatePending, ar.tasks[0].State().State, must.Sprint("waits for the variable"))

		src.PutVar("nomad/jobs/app", map[string]string{"port": "8080"})
		h.rec.waitStatus(t, a.ID, structs.AllocClientStatusRunning)
		must.Eq(t, "port=8080", readRendered(t, ar, "local/app.conf"))
		fi, err := os.Stat(filepath.Join(ar.tasks[0].dir.Dir, "local/app.conf"))
		must.NoError(t, err)
		must.Eq(t, os.FileMode(0o600), fi.Mode().Perm())
		must.Eq(t, "8080", ar.tasks[0].taskConfig().Env["APP_PORT"])
	})
}

// TestTemplateHook_ChangeModes checks each change_mode when a variable
// changes under a running task: restart restarts it in place, signal
// sends change_signal, noop only rewrites the file; and a re-render
// whose content did not change triggers nothing at all.
func TestTemplateHook_ChangeModes(t *testing.T) {
	for _, mode := range []string{structs.TemplateChangeModeRestart, structs.TemplateChangeModeSignal, structs.TemplateChangeModeNoop} {
		t.Run(mode, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src := templatetest.New()
				src.PutVar("nomad/jobs/app", map[string]string{"v": "1", "other": "x"})
				h, d := templateHarness(t, src)
				tmpl := &structs.Template{EmbeddedTmpl: `{{ with nomadVar "nomad/jobs/app" }}{{ .v }}{{ end }}`, DestPath: "local/v",
					ChangeMode: mode, Splay: 3 * time.Second}
				if mode == structs.TemplateChangeModeSignal {
					tmpl.ChangeSignal = "SIGHUP"
				}
				a := templateAlloc(tmpl)
				ar := h.runner(t, a)
				go ar.Run()
				defer ar.Destroy()
				h.rec.waitStatus(t, a.ID, structs.AllocClientStatusRunning)
				must.Eq(t, "1", readRendered(t, ar, "local/v"))

				// Same content: no restart, no signal.
				src.PutVar("nomad/jobs/app", map[string]string{"v": "1", "other": "y"})
				time.Sleep(time.Minute)
				synctest.Wait()
				must.Eq(t, 0, restarts(ar))
				must.SliceEmpty(t, d.got())

				src.PutVar("nomad/jobs/app", map[string]string{"v": "2", "other": "y"})
				time.Sleep(3 * time.Second) // the splay's most
				synctest.Wait()
				must.Eq(t, "2", readRendered(t, ar, "local/v"))
				switch mode {
				case structs.TemplateChangeModeRestart:
					must.Eq(t, 1, restarts(ar))
					must.SliceEmpty(t, d.got())
				case structs.TemplateChangeModeSignal:
					must.Eq(t, 0, restarts(ar))
					must.Eq(t, []string{"SIGHUP"}, d.got())
				default:
					must.Eq(t, 0, restarts(ar))
					must.SliceEmpty(t, d.got())
				}
			})
		})
	}
}

// TestTemplateHook_KeepsContentWhileCutOff checks that while the data
// source fails (servers out of reach) the rendered file keeps its content
// and the task is neither restarted nor stopped, and that a change made
// meanwhile arrives once the source answers again.
func TestTemplateHook_KeepsContentWhileCutOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := templatetest.New()
		src.PutVar("nomad/jobs/app", map[string]string{"v": "1"})
		h, _ := templateHarness(t, src)
		a := templateAlloc(&structs.Template{EmbeddedTmpl: `{{ with nomadVar "nomad/jobs/app" }}{{ .v }}{{ end }}`, DestPath: "local/v"})
		ar := h.runner(t, a)
		go ar.Run()
		defer ar.Destroy()
		h.rec.waitStatus(t, a.ID, structs.AllocClientStatusRunning)

		src.SetDown(errors.New("no servers"))
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		must.Eq(t, "1", readRendered(t, ar, "local/v"))
		must.Eq(t, 0, restarts(ar))
		must.Eq(t, structs.TaskStateRunning, ar.tasks[0].State().State)

		src.SetDown(nil)
		src.PutVar("nomad/jobs/app", map[string]string{"v": "2"})
		time.Sleep(templateRetryMax + structs.DefaultTemplateSplay)
		synctest.Wait()
		must.Eq(t, "2", readRendered(t, ar, "local/v"))
		must.Eq(t, 1, restarts(ar), must.Sprint("change_mode restart, the default"))
	})
}

// TestTemplateHook_WaitMin checks wait { min }: a change renders once
// its data has been quiet for min, each change meanwhile starting the
// quiet period again, so that a burst of writes is one render and one
// restart.
func TestTemplateHook_WaitMin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := templatetest.New()
		src.PutVar("nomad/jobs/app", map[string]string{"v": "1"})
		h, _ := templateHarness(t, src)
		a := templateAlloc(&structs.Template{EmbeddedTmpl: `{{ with nomadVar "nomad/jobs/app" }}{{ .v }}{{ end }}`, DestPath: "local/v",
			Wait: &structs.TemplateWait{Min: 10 * time.Second, Max: time.Minute}})
		ar := h.runner(t, a)
		go ar.Run()
		defer ar.Destroy()
		h.rec.waitStatus(t, a.ID, structs.AllocClientStatusRunning)

		src.PutVar("nomad/jobs/app", map[string]string{"v": "2"})
		time.Sleep(5 * time.Second)
		src.PutVar("nomad/jobs/app", map[string]string{"v": "3"})
		time.Sleep(9 * time.Second)
		synctest.Wait()
		must.Eq(t, "1", readRendered(t, ar, "local/v"), must.Sprint("not before min of quiet after the last change"))
		time.Sleep(2*time.Second + structs.DefaultTemplateSplay)
		synctest.Wait()
		must.Eq(t, "3", readRendered(t, ar, "local/v"))
		must.Eq(t, 1, restarts(ar))
	})
}

// TestTemplateHook_WaitMax checks wait { max }: data that never stays
// quiet for min still renders max after the first change, so a variable
// written every few seconds does not hold its template back for ever.
func TestTemplateHook_WaitMax(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := templatetest.New()
		src.PutVar("nomad/jobs/app", map[string]string{"v": "0"})
		h, _ := templateHarness(t, src)
		a := templateAlloc(&structs.Template{EmbeddedTmpl: `{{ with nomadVar "nomad/jobs/app" }}{{ .v }}{{ end }}`, DestPath: "local/v",
			Wait: &structs.TemplateWait{Min: 10 * time.Second, Max: 30 * time.Second}, ChangeMode: structs.TemplateChangeModeNoop})
		ar := h.runner(t, a)
		go ar.Run()
		defer ar.Destroy()
		h.rec.waitStatus(t, a.ID, structs.AllocClientStatusRunning)

		seen := map[int]string{}
		for i := 1; i <= 12; i++ {
			src.PutVar("nomad/jobs/app", map[string]string{"v": string(rune('a' + i))})
			time.Sleep(5 * time.Second)
			synctest.Wait()
			seen[i*5] = readRendered(t, ar, "local/v")
		}
		must.Eq(t, "0", seen[25], must.Sprint("busy data waits"))
		must.NotEq(t, "0", seen[35], must.Sprint("but no longer than max"))
	})
}

// TestTemplateHook_RestartedWhileCutOff checks the offline-reboot path
// for templates: a client restarted while the servers cannot be reached
// (its tasks gone with the reboot, the rendered file lost) renders the
// template from the data it persisted and starts the task; when the
// servers answer again with the same data nothing is restarted.
func TestTemplateHook_RestartedWhileCutOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := templatetest.New()
		src.PutVar("nomad/jobs/app", map[string]string{"v": "kept"})
		h, _ := templateHarness(t, src)
		stateDir := t.TempDir()
		db, err := state.OpenBolt(stateDir)
		must.NoError(t, err)
		h.db = db
		a := templateAlloc(&structs.Template{EmbeddedTmpl: `{{ with nomadVar "nomad/jobs/app" }}{{ .v }}{{ end }}`, DestPath: "local/v"})
		ar := h.runner(t, a)
		go ar.Run()
		h.rec.waitStatus(t, a.ID, structs.AllocClientStatusRunning)
		ar.Shutdown()
		must.NoError(t, db.Close())
		raw, err := os.ReadFile(filepath.Join(stateDir, state.DBFile))
		must.NoError(t, err)
		must.False(t, bytes.Contains(raw, []byte("kept")), must.Sprint("the kept data is sealed in the state file"))
		db, err = state.OpenBolt(stateDir)
		must.NoError(t, err)
		defer db.Close()
		h.db = db

		// The reboot: the driver's tasks are gone, and so is the file.
		d, err := mock.New(drivers.Options{}, nil)
		must.NoError(t, err)
		must.NoError(t, os.Remove(filepath.Join(ar.tasks[0].dir.Dir, "local/v")))
		src.SetDown(errors.New("no servers"))
		down := &fakeSigner{ttl: time.Hour, fail: 1 << 30}

		recs, _, err := h.db.GetAllocations()
		must.NoError(t, err)
		must.NotNil(t, recs[0].Tasks["web"].TemplateData)
		ar2, err := NewAllocRunner(Config{
			Alloc: recs[0].Alloc, AllocDirRoot: h.root, StateDB: h.db, Drivers: driverMap{mock.Name: d}, StateUpdater: h.rec,
			Identities: down, Templates: fixedSources{src: src},
		})
		must.NoError(t, err)
		ar2.Restore(recs[0].Tasks)
		go ar2.Run()
		defer ar2.Destroy()
		h.rec.waitFor(t, a.ID, func(a *structs.Allocation) bool {
			st := a.TaskStates["web"]
			return st != nil && st.State == structs.TaskStateRunning && st.Restarts > 0
		})
		must.Eq(t, "kept", readRendered(t, ar2, "local/v"))
		before := restarts(ar2)

		src.SetDown(nil)
		time.Sleep(templateRetryMax + structs.DefaultTemplateSplay)
		synctest.Wait()
		must.Eq(t, before, restarts(ar2), must.Sprint("the same data on reconnect restarts nothing"))
		must.Eq(t, "kept", readRendered(t, ar2, "local/v"))
	})
}

// TestTemplateHook_Paths checks where a template's destination lands:
// ${NOMAD_*} paths are interpolated with the task's host paths, other
// paths are relative to the task's directory, and ../alloc/ is the shared
// directory; a path out of both is refused, so a template never writes
// outside its allocation.
func TestTemplateHook_Paths(t *testing.T) {
	h := newHarness(t)
	a := templateAlloc(&structs.Template{EmbeddedTmpl: "x", DestPath: "local/x"})
	ar := h.runner(t, a)
	tr := ar.tasks[0]
	for in, want := range map[string]string{
		"local/x":                 filepath.Join(tr.dir.Dir, "local/x"),
		"${NOMAD_SECRETS_DIR}/s":  filepath.Join(tr.dir.SecretsDir, "s"),
		"../alloc/shared.txt":     filepath.Join(ar.allocDir.SharedDir, "shared.txt"),
		"/etc/passwd":             filepath.Join(tr.dir.Dir, "etc/passwd"),
		"${NOMAD_ALLOC_DIR}/a.db": filepath.Join(ar.allocDir.SharedDir, "a.db"),
	} {
		got, err := tr.templates.path(in)
		must.NoError(t, err, must.Sprint(in))
		must.Eq(t, want, got, must.Sprint(in))
	}
	_, err := tr.templates.path("../../../etc/passwd")
	must.ErrorContains(t, err, "outside the task's directory")
}

// TestTemplateHook_SharedWatch checks that a task's templates that read
// the same variable keep one blocking query on it between them: a change
// costs one watch answer and one read per template to render, not one
// watch per template.
func TestTemplateHook_SharedWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := templatetest.New()
		src.PutVar("nomad/jobs/app", map[string]string{"v": "1"})
		h, _ := templateHarness(t, src)
		const n = 5
		var tmpls []*structs.Template
		for i := range n {
			tmpls = append(tmpls, &structs.Template{EmbeddedTmpl: `{{ with nomadVar "nomad/jobs/app" }}{{ .v }}{{ end }}`,
				DestPath: "local/v" + string(rune('0'+i)), ChangeMode: structs.TemplateChangeModeNoop})
		}
		a := templateAlloc(tmpls...)
		ar := h.runner(t, a)
		go ar.Run()
		defer ar.Destroy()
		h.rec.waitStatus(t, a.ID, structs.AllocClientStatusRunning)
		synctest.Wait()
		before := src.Reads()
		src.PutVar("nomad/jobs/app", map[string]string{"v": "2"})
		synctest.Wait()
		for i := range n {
			must.Eq(t, "2", readRendered(t, ar, "local/v"+string(rune('0'+i))))
		}
		// n renders and the one query now waiting (the one that woke was
		// counted before the change).
		must.Eq(t, n+1, src.Reads()-before)
	})
}
