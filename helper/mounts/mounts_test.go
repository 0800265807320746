package mounts

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/shoenig/test/must"
	"golang.org/x/sys/unix"
)

func TestUnescape(t *testing.T) {
	must.Eq(t, "/a b/c\td\\e", UnescapePath(`/a\040b/c\011d\134e`))
	must.Eq(t, `/plain`, UnescapePath(`/plain`))
	must.Eq(t, `/end\04`, UnescapePath(`/end\04`))
}

// TestUnmountUnder checks that mounts below a directory, nested ones and
// one with a space in its path, are listed deepest first and detached, so
// that the directory can be removed.
func TestUnmountUnder(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting needs root")
	}
	dir := t.TempDir()
	outer := filepath.Join(dir, "task one", "secrets")
	must.NoError(t, os.MkdirAll(outer, 0o700))
	if err := unix.Mount("tmpfs", outer, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() { _ = UnmountUnder(dir) })
	inner := filepath.Join(outer, "inner")
	must.NoError(t, os.Mkdir(inner, 0o700))
	must.NoError(t, unix.Mount("tmpfs", inner, "tmpfs", 0, "size=1m"))

	must.Eq(t, []string{inner, outer}, Under(dir))
	must.SliceEmpty(t, Under(filepath.Join(dir, "task")), must.Sprint("a prefix of a name is not a parent"))
	must.NoError(t, UnmountUnder(dir))
	must.SliceEmpty(t, Under(dir))
	must.NoError(t, os.RemoveAll(dir))
}
