package client

import (
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoenig/test/must"
	bolt "go.etcd.io/bbolt"

	"github.com/nomad-edge/nomad/client/clienttest"
	"github.com/nomad-edge/nomad/client/state"
	"github.com/nomad-edge/nomad/client/upstreamstate"
	"github.com/nomad-edge/nomad/client/upstreamstate/upstreamstatetest"
)

// TestTakeover_UpstreamNodeBecomesOurs checks that a client started on an
// upstream client's data_dir registers as that node (its ID and secret),
// and, none of the tasks upstream recorded running here (the fixture's
// PIDs are another machine's: they are checked, not trusted), settles the
// takeover at its first sync with the servers and moves upstream's files
// aside; the next start is an ordinary restart of the same node.
func TestTakeover_UpstreamNodeBecomesOurs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := clienttest.NewFakeServer()
		defer srv.Close()
		dataDir := upstreamstatetest.DataDir(t)
		opts := testClientOpts{useBolt: true, stateDir: filepath.Join(dataDir, "client"), upstream: dataDir}
		c := newTestClient(t, srv, opts)
		waitReady(t, c)
		must.Eq(t, upstreamstatetest.NodeID, c.NodeID())
		must.Eq(t, upstreamstatetest.SecretID, c.Node().SecretID)
		must.NotNil(t, c.takeover)
		synctest.Wait()
		must.False(t, c.takeover.active(), must.Sprint("settled at the first sync"))
		moved := filepath.Join(dataDir, "client", takeoverDir)
		for _, f := range []string{upstreamstate.NodeIDFile, upstreamstate.SecretIDFile, upstreamstate.StateFile} {
			_, err := os.Stat(filepath.Join(dataDir, f))
			must.True(t, os.IsNotExist(err), must.Sprintf("%s still in place: %v", f, err))
			_, err = os.Stat(filepath.Join(moved, filepath.Base(f)))
			must.NoError(t, err)
		}
		must.NoError(t, c.Shutdown())

		c2 := newTestClient(t, srv, opts)
		defer c2.Destroy()
		waitReady(t, c2)
		must.Eq(t, upstreamstatetest.NodeID, c2.NodeID())
		must.Nil(t, c2.takeover)
		must.True(t, c2.tookOver, must.Sprint("a node taken over remembers it, for upstream's standby logmons"))
	})
}

// TestTakeover_Refusals checks that a client does not start on a data_dir
// whose upstream state it cannot take over as it is, naming why, and
// changes nothing there: an upstream agent still running on it (its
// state.db locked), a damaged state.db, and a data_dir where this client
// already is another node.
func TestTakeover_Refusals(t *testing.T) {
	start := func(dataDir string) error {
		_, err := NewClient(&Config{
			Logger:          clienttest.Logger(),
			RPCHandler:      clienttest.NewFakeServer(),
			StateDir:        filepath.Join(dataDir, "client"),
			AllocDir:        t.TempDir(),
			UpstreamDataDir: dataDir,
		})
		return err
	}
	identity := func(dataDir string) state.NodeIdentity {
		db, err := state.OpenBolt(filepath.Join(dataDir, "client"))
		must.NoError(t, err)
		defer db.Close()
		id, err := db.GetNodeIdentity()
		must.NoError(t, err)
		return id
	}

	t.Run("upstream agent still running", func(t *testing.T) {
		dataDir := upstreamstatetest.DataDir(t)
		db, err := bolt.Open(filepath.Join(dataDir, upstreamstate.StateFile), 0o600, &bolt.Options{Timeout: time.Second})
		must.NoError(t, err)
		defer db.Close()
		err = start(dataDir)
		must.ErrorIs(t, err, upstreamstate.ErrLocked)
		must.ErrorContains(t, err, "move "+filepath.Join(dataDir, upstreamstate.NodeIDFile)+" aside")
		db.Close()
		must.Eq(t, "", identity(dataDir).NodeID, must.Sprint("no identity taken"))
	})

	t.Run("damaged state", func(t *testing.T) {
		dataDir := upstreamstatetest.DataDir(t)
		path := filepath.Join(dataDir, upstreamstate.StateFile)
		must.NoError(t, os.WriteFile(path, []byte("not a bbolt file, not at all, not even close to one"), 0o600))
		err := start(dataDir)
		must.ErrorContains(t, err, path)
		must.Eq(t, "", identity(dataDir).NodeID)
	})

	t.Run("already another node", func(t *testing.T) {
		dataDir := upstreamstatetest.DataDir(t)
		db, err := state.OpenBolt(filepath.Join(dataDir, "client"))
		must.NoError(t, err)
		ours := state.NodeIdentity{NodeID: "11111111-2222-4333-8444-555555555555", SecretID: "66666666-7777-4888-8999-000000000000"}
		must.NoError(t, db.PutNodeIdentity(ours))
		must.NoError(t, db.Close())
		err = start(dataDir)
		must.ErrorContains(t, err, upstreamstatetest.NodeID)
		must.ErrorContains(t, err, ours.NodeID)
		must.Eq(t, ours, identity(dataDir))
		_, err = os.Stat(filepath.Join(dataDir, upstreamstate.NodeIDFile))
		must.NoError(t, err, must.Sprint("upstream's files left in place"))
	})
}
