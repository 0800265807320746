package state

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// TestBoltStateDB_SealedAtRest checks that template data and a task's
// identity are sealed under the client's own key: no file of the state
// dir but the key holds the plaintext, the key is 0600, a reopened
// database (an offline restart) gives the plaintext back, and a database
// whose key was replaced restores the task without them, saying why.
func TestBoltStateDB_SealedAtRest(t *testing.T) {
	dir := t.TempDir()
	db, err := OpenBolt(dir)
	must.NoError(t, err)
	a := mock.Alloc()
	must.NoError(t, db.PutAllocations(a))
	secret := []byte(`{"Vars":{"nomad/jobs/app":{"Items":{"pass":"s3cret-marker-7f2c"}}}}`)
	jwt := "eyJhbGciOi.jwt-marker-91ab.sig"
	must.NoError(t, db.PutTaskState(a.ID, "web", &structs.TaskState{State: structs.TaskStateRunning}))
	must.NoError(t, db.PutTaskTemplateData(a.ID, "web", secret))
	must.NoError(t, db.PutTaskIdentity(a.ID, "web", &structs.SignedWorkloadIdentity{JWT: jwt, Expiration: time.Unix(1_700_000_000, 0)}))
	must.NoError(t, db.Close())

	fi, err := os.Stat(filepath.Join(dir, KeyFile))
	must.NoError(t, err)
	must.Eq(t, fs.FileMode(0o600), fi.Mode().Perm())
	must.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		must.NoError(t, err)
		must.False(t, bytes.Contains(b, []byte("s3cret-marker-7f2c")), must.Sprintf("template data in plain text in %s", path))
		must.False(t, bytes.Contains(b, []byte("jwt-marker-91ab")), must.Sprintf("identity in plain text in %s", path))
		return nil
	}))

	db, err = OpenBolt(dir)
	must.NoError(t, err)
	recs, _, err := db.GetAllocations()
	must.NoError(t, err)
	tr := recs[0].Tasks["web"]
	must.Eq(t, secret, tr.TemplateData)
	must.Eq(t, jwt, tr.Identity.JWT)
	must.NoError(t, tr.Dropped)
	must.NoError(t, db.Close())

	// Another client's key (or a lost one): the values do not open.
	must.NoError(t, os.Remove(filepath.Join(dir, KeyFile)))
	db, err = OpenBolt(dir)
	must.NoError(t, err)
	defer db.Close()
	recs, _, err = db.GetAllocations()
	must.NoError(t, err)
	tr = recs[0].Tasks["web"]
	must.Nil(t, tr.TemplateData)
	must.Nil(t, tr.Identity)
	must.True(t, errors.Is(tr.Dropped, ErrSealed))
	must.NotNil(t, tr.State, must.Sprint("the rest of the task record restores"))
}

// TestBoltStateDB_SealBoundToTask checks that a sealed value copied into
// another task's record does not open there, so that one task's data
// cannot be handed to another by editing the file.
func TestBoltStateDB_SealBoundToTask(t *testing.T) {
	s, err := loadSealer(filepath.Join(t.TempDir(), "k"))
	must.NoError(t, err)
	sealed, err := s.seal([]byte("x"), sealAAD("a1", "web", templateKey))
	must.NoError(t, err)
	_, err = s.open(sealed, sealAAD("a1", "db", templateKey))
	must.ErrorIs(t, err, ErrSealed)
	got, err := s.open(sealed, sealAAD("a1", "web", templateKey))
	must.NoError(t, err)
	must.Eq(t, "x", string(got))
}

// TestBoltStateDB_BadKeyRefused checks that a key file of the wrong size
// stops the open with an error naming it rather than being replaced,
// which would drop every sealed value without a word.
func TestBoltStateDB_BadKeyRefused(t *testing.T) {
	dir := t.TempDir()
	must.NoError(t, os.MkdirAll(filepath.Join(dir, "client"), 0o700))
	must.NoError(t, os.WriteFile(filepath.Join(dir, KeyFile), []byte("short"), 0o600))
	_, err := OpenBolt(dir)
	must.ErrorContains(t, err, "state.key: 5 bytes, want 32")
}
