package allocrunner

import (
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"testing/synctest"

	"github.com/shoenig/test/must"
	"pgregory.net/rapid"

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

// node is what a task or an operator can see of one entry in an alloc dir.
type node struct {
	Mode     os.FileMode
	UID, GID uint32
	Data     string
}

// tree returns every entry under dir by its path relative to dir.
func tree(t *testing.T, dir string) map[string]node {
	t.Helper()
	out := map[string]node{}
	err := filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		n := node{Mode: fi.Mode(), UID: st.Uid, GID: st.Gid}
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			n.Data = string(b)
		}
		rel, err := filepath.Rel(dir, p)
		out[rel] = n
		return err
	})
	must.NoError(t, err)
	return out
}

// umaskedPerm is perm as mkdir(2) leaves it under this process's umask.
func umaskedPerm(t *testing.T, perm os.FileMode) os.FileMode {
	t.Helper()
	p := filepath.Join(t.TempDir(), "probe")
	must.NoError(t, os.Mkdir(p, 0o777))
	fi, err := os.Stat(p)
	must.NoError(t, err)
	return perm &^ (0o777 &^ fi.Mode().Perm())
}

// A task finds the directories it is promised, with the modes it is
// promised: scratch space any user may write to (1777, past the agent's
// umask, as a task may run as another user), secrets nobody
// else may read, and its log files before its first write. The root is
// created when missing, as on a client's first start.
func TestAllocDir_BuildLayout(t *testing.T) {
	root := filepath.Join(t.TempDir(), "data", "alloc")
	d := NewAllocDir(root, "a1")
	must.NoError(t, d.Build([]string{"web", "side"}))

	dir := os.ModeDir | umaskedPerm(t, 0o755)
	sticky := os.ModeDir | os.ModeSticky | 0o777 // whatever the umask: any task user writes there
	secret := os.ModeDir | umaskedPerm(t, 0o700)
	file := umaskedPerm(t, 0o644)
	want := map[string]os.FileMode{
		".": dir, "alloc": dir, "alloc/logs": dir, "alloc/data": dir, "alloc/tmp": sticky,
		"alloc/logs/web.stdout.0": file, "alloc/logs/web.stderr.0": file,
		"alloc/logs/side.stdout.0": file, "alloc/logs/side.stderr.0": file,
	}
	for _, task := range []string{"web", "side"} {
		td := d.TaskDir(task)
		for p, m := range map[string]os.FileMode{
			td.Dir: dir, td.LocalDir: dir, td.TmpDir: sticky, td.SecretsDir: secret,
		} {
			rel, err := filepath.Rel(d.Dir, p)
			must.NoError(t, err)
			want[rel] = m
		}
		for _, p := range []string{td.StdoutPath, td.StderrPath} {
			_, err := os.Stat(p)
			must.NoError(t, err, must.Sprint("TaskDir's log paths are the ones built"))
		}
	}
	got := map[string]os.FileMode{}
	for rel, n := range tree(t, d.Dir) {
		got[rel] = n.Mode
	}
	must.Eq(t, want, got)
}

// naiveBuild is the obvious way to build the layout, one os.MkdirAll per
// directory: the oracle that Build, tuned for syscalls, must agree with.
func naiveBuild(d *AllocDir, tasks []string) error {
	type dir struct {
		path string
		perm os.FileMode
	}
	dirs := []dir{
		{d.Dir, 0o755}, {d.SharedDir, 0o755}, {d.LogDir, 0o755},
		{filepath.Join(d.SharedDir, DataDirName), 0o755},
		{filepath.Join(d.SharedDir, TmpDirName), 0o777 | os.ModeSticky},
	}
	var files []string
	for _, t := range tasks {
		td := d.TaskDir(t)
		dirs = append(dirs, dir{td.Dir, 0o755}, dir{td.LocalDir, 0o755},
			dir{td.TmpDir, 0o777 | os.ModeSticky}, dir{td.SecretsDir, 0o700})
		files = append(files, td.StdoutPath, td.StderrPath)
	}
	for _, dir := range dirs {
		if err := os.MkdirAll(dir.path, dir.perm); err != nil {
			return err
		}
		if dir.perm&os.ModeSticky != 0 {
			if err := os.Chmod(dir.path, dir.perm); err != nil {
				return err
			}
		}
	}
	for _, p := range files {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}

// Whatever tasks a group has and whatever a restored allocation left on
// disk (some directories, a log file with output in it), Build leaves
// exactly the tree the naive oracle does: same entries, modes, owners and
// contents, so a restore neither loses output nor misses a directory.
func TestAllocDir_BuildMatchesNaiveOracle(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		tasks := rapid.SliceOfNDistinct(
			rapid.StringMatching(`[a-z][a-z0-9_.-]{0,7}`).Filter(func(s string) bool { return s != SharedAllocName }),
			1, 3, rapid.ID[string]).Draw(rt, "tasks")
		// Entries a previous run left, drawn from the full layout.
		ref := NewAllocDir(filepath.Join(t.TempDir(), "ref"), "a1")
		must.NoError(t, naiveBuild(ref, tasks))
		full := tree(t, ref.Dir)
		left := slices.Sorted(maps.Keys(full))
		left = rapid.SliceOfDistinct(rapid.SampledFrom(left), rapid.ID[string]).Draw(rt, "left")

		var trees []map[string]node
		for _, build := range []func(*AllocDir, []string) error{naiveBuild, (*AllocDir).Build} {
			d := NewAllocDir(filepath.Join(t.TempDir(), "alloc"), "a1")
			for _, rel := range left {
				p := filepath.Join(d.Dir, rel)
				if full[rel].Mode.IsRegular() {
					must.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
					must.NoError(t, os.WriteFile(p, []byte("output before the restart\n"), 0o600))
				} else {
					must.NoError(t, os.MkdirAll(p, 0o755))
				}
			}
			must.NoError(t, build(d, tasks))
			trees = append(trees, tree(t, d.Dir))
		}
		must.Eq(t, trees[0], trees[1])
	})
}

// An error names the path that could not be made, so that an operator can
// see which directory of the data dir is wrong.
func TestAllocDir_BuildErrorNamesThePath(t *testing.T) {
	root := t.TempDir()
	d := NewAllocDir(root, "a1")
	must.NoError(t, os.Mkdir(d.Dir, 0o755))
	must.NoError(t, os.WriteFile(d.SharedDir, nil, 0o644))
	err := d.Build([]string{"web"})
	must.ErrorIs(t, err, syscall.ENOTDIR)
	must.StrContains(t, err.Error(), filepath.Join(d.SharedDir, LogDirName))
}
