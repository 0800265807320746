//go:build linux

package netns_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/helper/netns"
)

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	var st syscall.Stat_t
	must.NoError(t, syscall.Stat(path, &st))
	return st.Ino
}

// TestNetns_Lifecycle checks that a pinned namespace exists by path, that
// Do runs its function inside it and puts the thread back, and that
// Remove leaves nothing: what drivers and allocnet rely on to start tasks
// in an allocation's namespace and clean it up.
func TestNetns_Lifecycle(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root")
	}
	path := filepath.Join(t.TempDir(), "ns1")
	must.NoError(t, netns.Create(path))
	t.Cleanup(func() { _ = netns.Remove(path) })
	must.True(t, netns.Exists(path))
	must.Error(t, netns.Create(path), must.Sprint("a second Create on the same path"))

	host := inode(t, "/proc/thread-self/ns/net")
	var inside uint64
	must.NoError(t, netns.Do(path, func() error {
		inside = inode(t, "/proc/thread-self/ns/net")
		return nil
	}))
	must.Eq(t, inode(t, path), inside)
	must.NotEq(t, host, inside)
	must.Eq(t, host, inode(t, "/proc/thread-self/ns/net"))
	boom := errors.New("boom")
	must.ErrorIs(t, netns.Do(path, func() error { return boom }), boom)

	must.NoError(t, netns.Remove(path))
	must.False(t, netns.Exists(path))
	_, err := os.Stat(path)
	must.True(t, errors.Is(err, os.ErrNotExist))
	must.NoError(t, netns.Remove(path), must.Sprint("removing twice"))
	must.ErrorIs(t, netns.Do(path, func() error { return nil }), netns.ErrNotNamespace)
}
