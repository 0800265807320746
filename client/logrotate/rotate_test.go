package logrotate

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shoenig/test/must"
)

func start(t *testing.T, dir string, files int, size int64) (*Rotator, *os.File) {
	t.Helper()
	r, err := Start(Config{FIFO: filepath.Join(dir, ".web.stdout.fifo"), Dir: dir, Base: "web.stdout", MaxFiles: files, MaxFileSize: size})
	must.NoError(t, err)
	// As a driver hands it to the task: read-write, so no SIGPIPE.
	w, err := os.OpenFile(filepath.Join(dir, ".web.stdout.fifo"), os.O_RDWR, 0)
	must.NoError(t, err)
	t.Cleanup(func() { w.Close() })
	return r, w
}

// A task's output is cut into files of max_file_size bytes named as
// upstream's, and only the newest max_files are kept: an edge device's
// small disk is never filled by a chatty task.
func TestRotator_RotatesAndKeepsMaxFiles(t *testing.T) {
	dir := t.TempDir()
	r, w := start(t, dir, 3, 10)
	_, err := w.Write([]byte(strings.Repeat("a", 10) + strings.Repeat("b", 10) + strings.Repeat("c", 10) + strings.Repeat("d", 10) + "eeeee"))
	must.NoError(t, err)
	r.Stop()

	must.Eq(t, []int{2, 3, 4}, Indexes(dir, "web.stdout"))
	for idx, want := range map[int]string{2: "cccccccccc", 3: "dddddddddd", 4: "eeeee"} {
		got, err := os.ReadFile(filepath.Join(dir, "web.stdout."+string(rune('0'+idx))))
		must.NoError(t, err)
		must.Eq(t, want, string(got))
	}
}

// A new client process continues the newest file instead of starting
// over, and the task's output written while no client ran is kept.
func TestRotator_ContinuesAfterRestart(t *testing.T) {
	dir := t.TempDir()
	r, w := start(t, dir, 5, 100)
	_, err := w.Write([]byte("one\n"))
	must.NoError(t, err)
	r.Stop()
	// The task writes while no client reads: the FIFO holds it.
	_, err = w.Write([]byte("two\n"))
	must.NoError(t, err)

	r2, err := Start(Config{FIFO: filepath.Join(dir, ".web.stdout.fifo"), Dir: dir, Base: "web.stdout", MaxFiles: 5, MaxFileSize: 100})
	must.NoError(t, err)
	_, err = w.Write([]byte("three\n"))
	must.NoError(t, err)
	r2.Stop()
	got, err := os.ReadFile(filepath.Join(dir, "web.stdout.0"))
	must.NoError(t, err)
	must.Eq(t, "one\ntwo\nthree\n", string(got))
	must.Eq(t, []int{0}, Indexes(dir, "web.stdout"))
}

// Invalid limits are refused rather than keeping nothing.
func TestRotator_RefusesZeroLimits(t *testing.T) {
	_, err := Start(Config{FIFO: filepath.Join(t.TempDir(), "f"), Dir: t.TempDir(), Base: "b", MaxFiles: 0, MaxFileSize: 1})
	must.ErrorContains(t, err, "must be positive")
	_ = bytes.MinRead
}
