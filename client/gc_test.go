package client

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/clienttest"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// runThree places three allocations that complete one second apart and
// waits until the servers hold all three complete.
func runThree(t *testing.T, srv *clienttest.FakeServer, c *Client) []*structs.Allocation {
	t.Helper()
	var allocs []*structs.Allocation
	for i := 1; i <= 3; i++ {
		a := clienttest.MockAlloc(c.NodeID(), map[string]any{"run_for": fmt.Sprintf("%ds", i)})
		a.Job.Type = structs.JobTypeBatch
		allocs = append(allocs, a)
	}
	srv.UpsertAllocs(allocs...)
	for _, a := range allocs {
		waitAllocStatus(t, srv, a.ID, structs.AllocClientStatusComplete)
	}
	synctest.Wait()
	return allocs
}

// A disk fuller than gc_disk_usage_threshold is relieved by destroying
// terminal allocations, the one that ended first first, each checked
// against the disk again, until usage is back under the threshold; the
// servers still list them, and they are not pulled and run again. Without
// it an edge device's small disk fills with old batch outputs.
func TestClient_GCDiskThreshold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := clienttest.NewFakeServer()
		defer srv.Close()
		allocDir := t.TempDir()
		var c *Client
		var checks atomic.Int32
		gc := GCConfig{
			Interval:           time.Minute,
			DiskUsageThreshold: 70,
			// Each allocation fills a fifth of the disk.
			DiskUsage: func() (DiskUsage, error) {
				checks.Add(1)
				return DiskUsage{UsedPercent: 40 + 20*float64(c.NumAllocs())}, nil
			},
		}
		c = newTestClient(t, srv, testClientOpts{allocDir: allocDir, gc: gc})
		defer c.Destroy()
		waitReady(t, c)
		allocs := runThree(t, srv, c)
		must.Eq(t, 3, c.NumAllocs())

		time.Sleep(time.Minute)
		synctest.Wait()
		must.Eq(t, 1, c.NumAllocs(), must.Sprint("100% and 80% are over 70%; 60% is not"))
		_, err := c.AllocRunner(allocs[2].ID)
		must.NoError(t, err, must.Sprint("the allocation that ended last is kept"))
		for _, a := range allocs[:2] {
			_, err := os.Stat(filepath.Join(allocDir, a.ID))
			must.True(t, errors.Is(err, os.ErrNotExist), must.Sprintf("alloc dir of %s kept", a.ID))
		}

		// The servers list them still: nothing is pulled again.
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		must.Eq(t, 1, c.NumAllocs())
		must.Eq(t, structs.AllocClientStatusComplete, srv.Alloc(allocs[0].ID).ClientStatus)
	})
}

// An allocation whose end the servers have not heard is never collected,
// however full the disk: destroyed, it could not report, and the servers
// would go on believing it runs.
func TestClient_GCKeepsUndelivered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := clienttest.NewFakeServer()
		defer srv.Close()
		gc := GCConfig{Interval: time.Minute, DiskUsage: func() (DiskUsage, error) { return DiskUsage{UsedPercent: 99}, nil }}
		c := newTestClient(t, srv, testClientOpts{gc: gc})
		defer c.Destroy()
		waitReady(t, c)

		srv.SetError(methodUpdateAlloc, errors.New("network unreachable"))
		a := clienttest.MockAlloc(c.NodeID(), map[string]any{"run_for": "1s"})
		a.Job.Type = structs.JobTypeBatch
		srv.UpsertAllocs(a)
		time.Sleep(3 * time.Minute)
		synctest.Wait()
		must.Eq(t, 1, c.NumAllocs())
		must.Eq(t, structs.AllocClientStatusComplete, c.Allocs()[0].ClientStatus)

		srv.SetError(methodUpdateAlloc, nil)
		waitAllocStatus(t, srv, a.ID, structs.AllocClientStatusComplete)
		time.Sleep(time.Minute)
		synctest.Wait()
		must.Eq(t, 0, c.NumAllocs())
	})
}

// Past gc_max_allocs the oldest terminal allocations make room, however
// empty the disk; running ones are never touched.
func TestClient_GCMaxAllocs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := clienttest.NewFakeServer()
		defer srv.Close()
		gc := GCConfig{Interval: time.Minute, MaxAllocs: 2, DiskUsage: func() (DiskUsage, error) { return DiskUsage{UsedPercent: 1}, nil }}
		c := newTestClient(t, srv, testClientOpts{gc: gc})
		defer c.Destroy()
		waitReady(t, c)
		allocs := runThree(t, srv, c)

		time.Sleep(time.Minute)
		synctest.Wait()
		must.Eq(t, 2, c.NumAllocs())
		_, err := c.AllocRunner(allocs[0].ID)
		must.Error(t, err, must.Sprint("the allocation that ended first is collected"))

		running := clienttest.MockAlloc(c.NodeID(), map[string]any{"run_for": "1h"})
		srv.UpsertAllocs(running)
		waitAllocStatus(t, srv, running.ID, structs.AllocClientStatusRunning)
		time.Sleep(time.Minute)
		synctest.Wait()
		must.Eq(t, 2, c.NumAllocs())
		_, err = c.AllocRunner(running.ID)
		must.NoError(t, err)
	})
}

// A forced collection (/v1/client/gc, /v1/client/allocation/:id/gc)
// destroys terminal allocations now, with the disk empty and far below
// gc_max_allocs; it refuses a running allocation in upstream's words, and
// a terminal one whose end the servers have not heard, by its own error:
// an operator freeing a cut-off device's disk must not make its servers
// believe forever that the allocation runs.
func TestClient_ForcedGC(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := clienttest.NewFakeServer()
		defer srv.Close()
		gc := GCConfig{Interval: time.Hour, DiskUsage: func() (DiskUsage, error) { return DiskUsage{UsedPercent: 1}, nil }}
		c := newTestClient(t, srv, testClientOpts{gc: gc})
		defer c.Destroy()
		waitReady(t, c)
		allocs := runThree(t, srv, c)
		running := clienttest.MockAlloc(c.NodeID(), map[string]any{"run_for": "1h"})
		srv.UpsertAllocs(running)
		waitAllocStatus(t, srv, running.ID, structs.AllocClientStatusRunning)

		must.ErrorIs(t, c.CollectAllocation(running.ID), ErrNotCollectable)
		must.ErrorIs(t, c.CollectAllocation("no-such-alloc"), ErrNotCollectable)
		must.NoError(t, c.CollectAllocation(allocs[1].ID))
		_, err := c.AllocRunner(allocs[1].ID)
		must.Error(t, err, must.Sprint("collected at once"))
		must.Eq(t, 3, c.NumAllocs())

		must.Eq(t, 2, c.CollectAll())
		must.Eq(t, 1, c.NumAllocs())
		_, err = c.AllocRunner(running.ID)
		must.NoError(t, err, must.Sprint("a running allocation is never collected"))

		srv.SetError(methodUpdateAlloc, errors.New("network unreachable"))
		cut := clienttest.MockAlloc(c.NodeID(), map[string]any{"run_for": "1s"})
		cut.Job.Type = structs.JobTypeBatch
		srv.UpsertAllocs(cut)
		time.Sleep(time.Minute)
		synctest.Wait()
		must.ErrorIs(t, c.CollectAllocation(cut.ID), ErrFinalStateUndelivered)
		must.Eq(t, 0, c.CollectAll())
		must.Eq(t, 2, c.NumAllocs())

		// The servers still list the collected ones: nothing is pulled again.
		srv.SetError(methodUpdateAlloc, nil)
		waitAllocStatus(t, srv, cut.ID, structs.AllocClientStatusComplete)
		synctest.Wait()
		must.NoError(t, c.CollectAllocation(cut.ID))
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		must.Eq(t, 1, c.NumAllocs())
	})
}
