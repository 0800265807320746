package testutil_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/nomad-edge/nomad/testutil"
	"github.com/shoenig/test/must"
)

// Three in-memory servers with upstream's raft and gossip timings elect a
// leader on fake time, and a client registers; the harness itself must
// work before any test on it can be believed.
func TestMemCluster_ElectsLeaderAndRegistersClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		c := testutil.NewMemCluster(t, testutil.MemClusterConfig{Servers: 3, Clients: 1})
		must.NotNil(t, c.Leader())
		t.Logf("leader and client after %v of fake time", time.Since(start))
	})
}
