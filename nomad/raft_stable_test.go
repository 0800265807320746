package nomad

import (
	"path/filepath"
	"testing"
	"testing/synctest"

	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"
)

// TestRaftStores_TermWrittenAfterCloseParks checks that a write of the
// term that reaches the stable store after the server closed its raft
// stores neither fails (raft panics: "failed to save current term:
// database not open", the race run's crash of TestServers_TLS_ACL_Forwarding)
// nor is answered as stored: it waits, and the write in flight when close
// came finished first.
func TestRaftStores_TermWrittenAfterCloseParks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "raft")
		stores, err := openRaftStores(dir, false, hclog.NewNullLogger())
		must.NoError(t, err)
		stable := stores.stable.(*closingStable)
		stable.parked = make(chan struct{})
		key := []byte("CurrentTerm")
		must.NoError(t, stable.SetUint64(key, 3))

		must.NoError(t, stores.close())
		late := make(chan error, 1)
		go func() { late <- stable.SetUint64(key, 4) }()
		synctest.Wait()
		select {
		case err := <-late:
			t.Fatalf("a write after close returned (%v); it must wait", err)
		default:
		}
		close(stable.parked)
		must.ErrorIs(t, <-late, errUnparked)

		// What was written before close is there; the late term is not.
		again, err := openRaftStores(dir, false, hclog.NewNullLogger())
		must.NoError(t, err)
		defer again.close()
		term, err := again.stable.GetUint64(key)
		must.NoError(t, err)
		must.Eq(t, uint64(3), term)
	})
}
