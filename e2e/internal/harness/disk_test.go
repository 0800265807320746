package harness

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/shoenig/test/must"
)

// A Disk fails as the chaos run needs: its writes fail with the errno
// given while what is on it stays readable, it fills to the last byte,
// and Heal gives both back. A fault that did not reach the agent's
// writes would let the chaos run pass without testing anything.
func TestDisk_FailsAndHeals(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a Disk mounts a tmpfs and a FUSE filesystem: run as root")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("a Disk needs FUSE: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "data")
	d := MountDisk(t, dir, "16m")
	kept := filepath.Join(dir, "kept")
	must.NoError(t, os.WriteFile(kept, []byte("before"), 0o644))
	nested := filepath.Join(dir, "a", "b", "nested")
	must.NoError(t, os.MkdirAll(filepath.Dir(nested), 0o755))
	must.NoError(t, os.WriteFile(nested, []byte("before"), 0o644))

	d.Fail(syscall.EIO)
	f, err := os.OpenFile(kept, os.O_WRONLY, 0)
	must.NoError(t, err)
	// Closed before the mount goes, whatever fails: a file this process
	// holds open on its own FUSE mount would hang its exit.
	defer f.Close()
	_, err = f.Write([]byte("during"))
	if err == nil {
		err = f.Sync()
	}
	must.True(t, errors.Is(err, syscall.EIO), must.Sprintf("a write while failing: %v", err))
	must.True(t, errors.Is(os.WriteFile(filepath.Join(dir, "new"), nil, 0o644), syscall.EIO))
	must.True(t, errors.Is(os.Rename(kept, kept+".moved"), syscall.EIO))
	must.True(t, errors.Is(os.Mkdir(filepath.Join(dir, "sub"), 0o755), syscall.EIO))
	// Deep in the tree too, where raft keeps its files.
	must.True(t, errors.Is(os.WriteFile(nested, []byte("during"), 0o644), syscall.EIO))
	got, err := os.ReadFile(kept)
	must.NoError(t, err)
	must.Eq(t, "before", string(got))

	d.Heal()
	must.NoError(t, os.WriteFile(kept, []byte("after"), 0o644))
	n, err := d.Fill()
	must.NoError(t, err)
	must.Greater(t, 8<<20, n)
	must.True(t, errors.Is(os.WriteFile(filepath.Join(dir, "more"), make([]byte, 1<<20), 0o644), syscall.ENOSPC))
	d.Heal()
	must.NoError(t, os.WriteFile(filepath.Join(dir, "more"), make([]byte, 1<<20), 0o644))
}
