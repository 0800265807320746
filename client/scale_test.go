package client

import (
	"maps"
	"os"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/clienttest"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// thousandAllocs returns n allocations of one mock_driver job on nodeID,
// sharing the job as a scheduler's placements do.
func thousandAllocs(nodeID string, n int) []*structs.Allocation {
	tmpl := clienttest.MockAlloc(nodeID, map[string]any{"run_for": "0s"})
	tmpl.Job.TaskGroups[0].Count = n
	out := make([]*structs.Allocation, n)
	for i := range out {
		a := tmpl.Copy()
		a.ID = structs.GenerateUUID()
		a.Name = structs.AllocName(a.JobID, a.TaskGroup, uint(i))
		out[i] = a
	}
	return out
}

// TestClient_1000Allocs checks that one client runs a thousand allocations
// and reports them all running, with the bbolt database, and that the
// reports are batched rather than sent one call per change.
func TestClient_1000Allocs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := clienttest.NewFakeServer()
		defer srv.Close()
		c := newTestClient(t, srv, testClientOpts{useBolt: true})
		defer c.Destroy()
		waitReady(t, c)

		allocs := thousandAllocs(c.NodeID(), 1000)
		srv.UpsertAllocs(allocs...)
		ids := clienttest.AllocIDs(allocs)
		srv.WaitFor(t, time.Minute, func(v *clienttest.View) (bool, string) {
			return v.AllocsWithStatus(ids, structs.AllocClientStatusRunning)
		})
		must.Eq(t, 1000, c.NumAllocs())
		must.Less(t, 100, srv.UpdateCalls())
	})
}

// BenchmarkClient_1000Allocs measures, in real time, how long a client takes
// from a thousand mock_driver allocations appearing on the server to all of
// them being reported running, with the bbolt state database on disk. The
// alloc dirs go to disk, and to tmpfs where /dev/shm exists: on slow disks
// creating 9,000 directories is most of the time.
func BenchmarkClient_1000Allocs(b *testing.B) {
	dirs := map[string]func() string{"allocdir=disk": b.TempDir}
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		dirs["allocdir=tmpfs"] = func() string {
			d, err := os.MkdirTemp("/dev/shm", "nomad-bench-")
			must.NoError(b, err)
			b.Cleanup(func() { _ = os.RemoveAll(d) })
			return d
		}
	}
	for _, name := range slices.Sorted(maps.Keys(dirs)) {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				srv := clienttest.NewFakeServer()
				c := newTestClient(b, srv, testClientOpts{useBolt: true, allocDir: dirs[name]()})
				waitReady(b, c)
				allocs := thousandAllocs(c.NodeID(), 1000)
				ids := clienttest.AllocIDs(allocs)
				b.StartTimer()

				srv.UpsertAllocs(allocs...)
				srv.WaitFor(b, time.Minute, func(v *clienttest.View) (bool, string) {
					return v.AllocsWithStatus(ids, structs.AllocClientStatusRunning)
				})

				b.StopTimer()
				must.NoError(b, c.Destroy())
				srv.Close()
				b.StartTimer()
			}
		})
	}
}
