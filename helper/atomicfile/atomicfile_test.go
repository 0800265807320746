package atomicfile_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/helper/atomicfile"
)

// Write replaces a file's content whole with the mode asked and leaves no
// temporary file; a write that cannot be made keeps the old content and
// says which file: a node identity or a key must never be half written.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "id")
	must.NoError(t, atomicfile.Write(path, []byte("one"), 0o600))
	must.NoError(t, atomicfile.Write(path, []byte("two"), 0o600))
	b, err := os.ReadFile(path)
	must.NoError(t, err)
	must.Eq(t, "two", string(b))
	fi, err := os.Stat(path)
	must.NoError(t, err)
	must.Eq(t, os.FileMode(0o600), fi.Mode().Perm())
	entries, err := os.ReadDir(dir)
	must.NoError(t, err)
	must.Len(t, 1, entries, must.Sprint("no temporary file left"))

	err = atomicfile.Write(filepath.Join(dir, "missing", "id"), []byte("x"), 0o600)
	must.ErrorContains(t, err, "writing "+filepath.Join(dir, "missing", "id"))
	b, err = os.ReadFile(path)
	must.NoError(t, err)
	must.Eq(t, "two", string(b))
}
