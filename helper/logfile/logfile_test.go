package logfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/helper/clock/clocktest"
)

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	must.NoError(t, err)
	return string(b)
}

// A write that would take the file past RotateBytes goes to a new file
// and the full one is renamed with upstream's nomad-<unix ns>.log; only
// the newest MaxFiles rotated files stay; nothing written is lost or
// split across files.
func TestWriter_RotatesBySize(t *testing.T) {
	dir := t.TempDir()
	clk := clocktest.NewManual(time.Unix(1_700_000_000, 0))
	w, err := Open(Config{Path: filepath.Join(dir, "nomad.log"), RotateBytes: 10, MaxFiles: 2, Clock: clk})
	must.NoError(t, err)
	t.Cleanup(func() { _ = w.Close() })
	for _, line := range []string{"aaaa\n", "bbbb\n", "cccc\n", "dddd\n", "eeee\n", "ffff\n", "gggg\n"} {
		_, err := w.Write([]byte(line))
		must.NoError(t, err)
		clk.Advance(time.Millisecond)
	}
	must.Eq(t, "gggg\n", read(t, w.Path()))
	rotated, err := w.Rotated()
	must.NoError(t, err)
	must.SliceLen(t, 2, rotated)
	must.Eq(t, "cccc\ndddd\n", read(t, rotated[0]))
	must.Eq(t, "eeee\nffff\n", read(t, rotated[1]))
	must.StrHasPrefix(t, filepath.Join(dir, "nomad-17000000000"), rotated[0])
	st, err := os.Stat(w.Path())
	must.NoError(t, err)
	must.Eq(t, os.FileMode(0o640), st.Mode().Perm())

	// One write larger than the limit still lands whole.
	big := strings.Repeat("x", 25)
	_, err = w.Write([]byte(big))
	must.NoError(t, err)
	must.Eq(t, big, read(t, w.Path()))
}

// A file written for RotateDuration is rotated at the next write; with
// MaxFiles 0 every rotated file is kept; a directory as the path writes
// nomad.log in it; an agent restarted on the same file appends to it.
func TestWriter_RotatesByAgeAndAppends(t *testing.T) {
	dir := t.TempDir()
	clk := clocktest.NewManual(time.Unix(1_700_000_000, 0))
	w, err := Open(Config{Path: dir + string(os.PathSeparator), RotateDuration: time.Hour, Clock: clk})
	must.NoError(t, err)
	must.Eq(t, filepath.Join(dir, "nomad.log"), w.Path())
	for range 3 {
		_, err := w.Write([]byte("line\n"))
		must.NoError(t, err)
		clk.Advance(30 * time.Minute)
		_, err = w.Write([]byte("line\n"))
		must.NoError(t, err)
		clk.Advance(30 * time.Minute)
	}
	rotated, err := w.Rotated()
	must.NoError(t, err)
	must.SliceLen(t, 2, rotated, must.Sprint("the third hour's file is still open"))
	must.NoError(t, w.Close())
	_, err = w.Write([]byte("late\n"))
	must.Error(t, err)

	again, err := Open(Config{Path: dir, Clock: clk})
	must.NoError(t, err)
	t.Cleanup(func() { _ = again.Close() })
	_, err = again.Write([]byte("after restart\n"))
	must.NoError(t, err)
	must.Eq(t, "line\nline\nafter restart\n", read(t, again.Path()))

	_, err = Open(Config{Path: dir, RotateBytes: -1})
	must.ErrorContains(t, err, "must not be negative")
}
