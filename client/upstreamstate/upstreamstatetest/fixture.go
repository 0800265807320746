// Package upstreamstatetest gives tests the data_dir an upstream Nomad
// 1.6.5 client left (../testdata/README.md says how it was made).
package upstreamstatetest

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// The fixture's node.
const (
	NodeID   = "0b453850-c5c6-eace-e80a-f3e9d6f2de10"
	SecretID = "1532be48-413a-560f-a580-71d2e820db6c"
)

// DataDir copies the fixture into a temporary data_dir, its state.db
// unpacked, and returns the data_dir.
func DataDir(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("upstreamstatetest: cannot find the fixture")
	}
	src := filepath.Join(filepath.Dir(file), "..", "testdata", "datadir", "client")
	dir := t.TempDir()
	dst := filepath.Join(dir, "client")
	if err := os.MkdirAll(dst, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"client-id", "secret-id"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	gz, err := os.Open(filepath.Join(src, "state.db.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer gz.Close()
	zr, err := gzip.NewReader(gz)
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(filepath.Join(dst, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, zr); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}
