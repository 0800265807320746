package allocrunner

import (
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/clienttest"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// entries lists what dir holds, for asserting nothing appeared beside it.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	must.NoError(t, err)
	var out []string
	for _, de := range des {
		out = append(out, de.Name())
	}
	return out
}

// The client runs as root: a task or allocation name that is not one
// directory of its own must never make it create (or remove) anything
// outside the alloc dir, whatever the server sent. Validation refuses such
// names at registration; this is the second wall.
func TestAllocDir_RefusesNamesLeavingTheAllocDir(t *testing.T) {
	for _, name := range []string{"../../x", "..", ".", "", "a/b", "/etc", `a\b`, "alloc", "x\x00y"} {
		t.Run(name, func(t *testing.T) {
			base := t.TempDir()
			root := filepath.Join(base, "data", "alloc")
			must.NoError(t, os.MkdirAll(root, 0o755))
			d := NewAllocDir(root, "a1")
			err := d.Build([]string{"ok", name})
			must.ErrorIs(t, err, ErrUnsafeName)
			must.StrContains(t, err.Error(), "task name")
			must.Eq(t, []string{"data"}, entries(t, base))
			_, statErr := os.Stat(filepath.Join(root, "a1"))
			must.True(t, os.IsNotExist(statErr), must.Sprint("nothing is built when one name is unsafe"))
		})
	}
	for _, id := range []string{"../../x", "..", "a/b", ""} {
		t.Run("alloc "+id, func(t *testing.T) {
			base := t.TempDir()
			root := filepath.Join(base, "data", "alloc")
			must.NoError(t, os.MkdirAll(root, 0o755))
			d := NewAllocDir(root, id)
			must.ErrorIs(t, d.Build([]string{"web"}), ErrUnsafeName)
			must.ErrorIs(t, d.Destroy(), ErrUnsafeName)
			must.Eq(t, []string{"data"}, entries(t, base))
			must.Eq(t, []string{"alloc"}, entries(t, filepath.Join(base, "data")))
		})
	}
}

// An allocation whose task is named ../../x fails its task at setup, with
// the reason, and writes nothing outside the alloc dir root.
func TestAllocRunner_TaskNameOutsideAllocDirFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.root = filepath.Join(h.root, "alloc")
		must.NoError(t, os.Mkdir(h.root, 0o755))
		a := clienttest.MockAlloc("node-1", map[string]any{"run_for": "1s"})
		a.Job.TaskGroups[0].Tasks[0].Name = "../../x"
		ar := h.runner(t, a)
		go ar.Run()
		defer ar.Destroy()
		got := h.rec.waitStatus(t, a.ID, structs.AllocClientStatusFailed)
		ts := got.TaskStates["../../x"]
		must.NotNil(t, ts)
		must.StrContains(t, ts.Events[len(ts.Events)-1].SetupError, `unsafe task name "../../x"`)
		must.Eq(t, []string{"alloc"}, entries(t, filepath.Dir(h.root)))
	})
}
