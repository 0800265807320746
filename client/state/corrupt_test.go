package state

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// filledDB writes a database under dir large enough that cutting it
// short loses pages that its metadata still points at.
func filledDB(t *testing.T, dir string) string {
	t.Helper()
	db, err := OpenBolt(dir)
	must.NoError(t, err)
	must.NoError(t, db.PutNodeIdentity(NodeIdentity{NodeID: "n1", SecretID: "s1"}))
	allocs := make([]*structs.Allocation, 200)
	for i := range allocs {
		allocs[i] = mock.Alloc()
	}
	must.NoError(t, db.PutAllocations(allocs...))
	must.NoError(t, db.Close())
	return filepath.Join(dir, DBFile)
}

// A truncated or garbled state file once crashed the client with SIGBUS
// at start-up (issue 5). It must be detected, moved aside under a name
// that says so (kept for a post-mortem, never overwritten) and replaced
// with an empty database, so the client starts.
func TestOpenBolt_CorruptFileMovedAside(t *testing.T) {
	cases := map[string]func(t *testing.T, path string){
		"truncated": func(t *testing.T, path string) {
			fi, err := os.Stat(path)
			must.NoError(t, err)
			must.NoError(t, os.Truncate(path, fi.Size()/3))
		},
		"truncated to a page": func(t *testing.T, path string) {
			must.NoError(t, os.Truncate(path, 4096))
		},
		"garbage": func(t *testing.T, path string) {
			must.NoError(t, os.WriteFile(path, []byte(strings.Repeat("not a database ", 10_000)), 0o600))
		},
	}
	for name, damage := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filledDB(t, dir)
			damage(t, path)
			damaged, err := os.ReadFile(path)
			must.NoError(t, err)

			now := time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)
			db, err := openBolt(dir, func() time.Time { return now })
			must.NoError(t, err)
			defer db.Close()

			rec := db.Recovery()
			must.NotNil(t, rec)
			must.Eq(t, path, rec.Path)
			must.Eq(t, path+".corrupt-20261201T093000Z", rec.MovedTo)
			must.Error(t, rec.Err)
			kept, err := os.ReadFile(rec.MovedTo)
			must.NoError(t, err)
			must.Eq(t, len(damaged), len(kept), must.Sprint("the damaged file is kept as it was"))

			// The node keeps its identity, from the separate identity
			// file, so it registers as the node it was rather than as a
			// stranger that leaves its old self to time out as down.
			id, err := db.GetNodeIdentity()
			must.NoError(t, err)
			must.Eq(t, NodeIdentity{NodeID: "n1", SecretID: "s1"}, id)
			must.NoError(t, db.PutAllocations(mock.Alloc()))
		})
	}
}

// A healthy database is opened as it is, with nothing moved.
func TestOpenBolt_HealthyFileKept(t *testing.T) {
	dir := t.TempDir()
	filledDB(t, dir)
	db, err := OpenBolt(dir)
	must.NoError(t, err)
	defer db.Close()
	must.Nil(t, db.Recovery())
	recs, _, err := db.GetAllocations()
	must.NoError(t, err)
	must.Len(t, 200, recs)
	matches, _ := filepath.Glob(filepath.Join(dir, DBFile+".corrupt-*"))
	must.SliceEmpty(t, matches)
}

// The identity file is written with the database, readable by its owner
// only, and a damaged identity file beside a damaged database leaves the
// client a new node rather than failing its start.
func TestOpenBolt_IdentityFile(t *testing.T) {
	dir := t.TempDir()
	path := filledDB(t, dir)
	idPath := filepath.Join(dir, IdentityFile)
	fi, err := os.Stat(idPath)
	must.NoError(t, err)
	must.Eq(t, os.FileMode(0o600), fi.Mode().Perm())

	must.NoError(t, os.Truncate(path, 4096))
	must.NoError(t, os.WriteFile(idPath, []byte("{not json"), 0o600))
	db, err := OpenBolt(dir)
	must.NoError(t, err)
	defer db.Close()
	must.NotNil(t, db.Recovery())
	id, err := db.GetNodeIdentity()
	must.NoError(t, err)
	must.Eq(t, NodeIdentity{}, id)
}

// A database from before the identity file gets one when it is opened,
// so its first damage already finds the identity beside it.
func TestOpenBolt_IdentityFileWrittenForOldDatabase(t *testing.T) {
	dir := t.TempDir()
	filledDB(t, dir)
	idPath := filepath.Join(dir, IdentityFile)
	must.NoError(t, os.Remove(idPath))
	db, err := OpenBolt(dir)
	must.NoError(t, err)
	must.NoError(t, db.Close())
	id, err := readIdentity(idPath)
	must.NoError(t, err)
	must.Eq(t, NodeIdentity{NodeID: "n1", SecretID: "s1"}, id)
}

// An empty (zero-length) state file is a lost database, not a new one:
// bbolt would silently make a fresh database of it and the client would
// start as a new node, its allocations orphaned (issue 26). It is moved
// aside and reported as damaged, with the error naming the file and how
// to start afresh, and the node keeps its identity from the identity file.
func TestOpenBolt_EmptyFileIsDamage(t *testing.T) {
	dir := t.TempDir()
	path := filledDB(t, dir)
	must.NoError(t, os.Truncate(path, 0))

	db, err := OpenBolt(dir)
	must.NoError(t, err)
	defer db.Close()
	rec := db.Recovery()
	must.NotNil(t, rec, must.Sprint("an empty state file was opened as a new database"))
	must.ErrorIs(t, rec.Err, ErrCorrupt)
	must.ErrorContains(t, rec.Err, path)
	must.ErrorContains(t, rec.Err, "remove the file")
	id, err := db.GetNodeIdentity()
	must.NoError(t, err)
	must.Eq(t, NodeIdentity{NodeID: "n1", SecretID: "s1"}, id)
}
