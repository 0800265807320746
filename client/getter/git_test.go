package getter

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// A git artifact is kept in the cache by source and ref: a task that must
// clone again while the remote cannot be reached (a task that never got
// to start before a power cut, a new allocation) gets the clone it had,
// marked stale, instead of failing; with the remote back, a clone is
// fresh again and keeps what the ref now names. Without it an edge node
// cut off from its git server could not start a task it had cloned before.
func TestGet_GitCachedWhenRemoteGone(t *testing.T) {
	repo := filepath.Join(t.TempDir(), "repo")
	newGitRepo(t, repo)
	cfg := DefaultConfig()
	cfg.GitTimeout = time.Minute
	cfg.DisableFilesystemIsolation = true // the repository is outside the allocation
	g, cache := newTestGetter(t, cfg, 1<<20)
	req := func(td string) Request {
		return Request{Source: "git::file://" + repo, Dest: "local/repo", TaskDir: td, Options: map[string]string{"ref": "main"}}
	}
	read := func(td string) string {
		b, err := os.ReadFile(filepath.Join(td, "local", "repo", "v.txt"))
		must.NoError(t, err)
		return string(b)
	}

	td := newTaskDir(t)
	res, err := g.Get(context.Background(), req(td))
	must.NoError(t, err)
	must.False(t, res.FromCache)
	must.Eq(t, "v2", read(td))
	must.DirExists(t, filepath.Join(td, "local", "repo", ".git"), must.Sprint("a clone, as go-getter leaves it"))
	must.Positive(t, cache.Size())

	gone := repo + ".gone"
	must.NoError(t, os.Rename(repo, gone))
	td2 := newTaskDir(t)
	res, err = g.Get(context.Background(), req(td2))
	must.NoError(t, err)
	must.True(t, res.FromCache)
	must.ErrorIs(t, res.Stale, errUnreachable)
	must.Eq(t, "v2", read(td2))

	// Another ref is another entry: nothing to stand in for it.
	other := req(newTaskDir(t))
	other.Options = map[string]string{"ref": "v1"}
	_, err = g.Get(context.Background(), other)
	must.Error(t, err)

	must.NoError(t, os.Rename(gone, repo))
	must.NoError(t, os.WriteFile(filepath.Join(repo, "v.txt"), []byte("v3"), 0o644))
	gitIn(t, repo, "commit", "-q", "-am", "v3")
	td3 := newTaskDir(t)
	res, err = g.Get(context.Background(), req(td3))
	must.NoError(t, err)
	must.False(t, res.FromCache)
	must.Eq(t, "v3", read(td3))
	must.NoError(t, os.RemoveAll(repo))
	td4 := newTaskDir(t)
	res, err = g.Get(context.Background(), req(td4))
	must.NoError(t, err)
	must.Eq(t, "v3", read(td4), must.Sprint("the latest clone is the one kept"))
}

// A kept tree whose entries would land outside the destination (a name
// with "..", a link out) is refused, not unpacked.
func TestUntarTree_RefusesEscapes(t *testing.T) {
	root := t.TempDir()
	must.NoError(t, os.WriteFile(filepath.Join(root, "a"), []byte("x"), 0o644))
	must.NoError(t, os.Symlink("../../etc/passwd", filepath.Join(root, "out")))
	blob := filepath.Join(t.TempDir(), "t.tar")
	_, _, err := tarTree(root, blob)
	must.NoError(t, err)
	must.ErrorIs(t, untarTree(blob, t.TempDir()), errTreeEscapes)
}
