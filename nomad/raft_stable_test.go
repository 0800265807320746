package nomad

import (
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
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

// failingStable is a stable store whose writes fail while fail is set, as
// a full or failing disk's do.
type failingStable struct {
	raft.StableStore
	fail  atomic.Bool
	tries atomic.Int32
}

func (f *failingStable) SetUint64(key []byte, val uint64) error {
	f.tries.Add(1)
	if f.fail.Load() {
		return syscall.EIO
	}
	return f.StableStore.SetUint64(key, val)
}

// A term write that fails (the disk failing with EIO) neither fails (raft
// panics on it) nor is answered as stored: it is tried again, with a
// backoff, and returns once the disk takes it; a close while it waits
// parks it as any later call.
func TestRaftStores_FailedTermWriteWaitsForTheDisk(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "raft")
		stores, err := openRaftStores(dir, false, hclog.NewNullLogger())
		must.NoError(t, err)
		defer stores.close()
		stable := stores.stable.(*closingStable)
		disk := &failingStable{StableStore: stable.store}
		stable.store = disk
		key := []byte("CurrentTerm")

		disk.fail.Store(true)
		done := make(chan error, 1)
		go func() { done <- stable.SetUint64(key, 7) }()
		time.Sleep(10 * time.Second)
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("the write returned (%v) while the disk failed", err)
		default:
		}
		tries := disk.tries.Load()
		must.Between(t, 5, tries, 20, must.Sprint("tried again with a backoff up to a second, not in a busy loop"))
		disk.fail.Store(false)
		time.Sleep(stableRetryMax)
		synctest.Wait()
		must.NoError(t, <-done)
		term, err := stable.GetUint64(key)
		must.NoError(t, err)
		must.Eq(t, uint64(7), term)

		stable.parked = make(chan struct{})
		disk.fail.Store(true)
		go func() { done <- stable.SetUint64(key, 8) }()
		synctest.Wait()
		stable.close()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("the failing write returned (%v) at close; it must park", err)
		default:
		}
		close(stable.parked)
		must.ErrorIs(t, <-done, errUnparked)
	})
}
