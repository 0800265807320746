package client

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nomad-edge/nomad/client/allocrunner"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// Upstream's defaults for the client's gc_* keys.
const (
	DefaultGCInterval            = time.Minute
	DefaultGCDiskUsageThreshold  = 80.0
	DefaultGCInodeUsageThreshold = 70.0
	DefaultGCMaxAllocs           = 50
	DefaultGCParallelDestroys    = 2
)

// GCConfig is the client's collector of terminal allocations (the gc_*
// keys of the client block). A terminal allocation keeps its directory
// (logs, outputs) until the servers garbage collect it, or until this
// collector needs the room: when the allocation directory's file system
// is fuller than a threshold, or the node holds more than MaxAllocs
// allocations. Zero fields take upstream's defaults.
type GCConfig struct {
	// Interval is how often the disk thresholds are checked.
	Interval time.Duration
	// DiskUsageThreshold and InodeUsageThreshold are the percentages of
	// the allocation directory's file system the collector keeps usage
	// at or below, destroying the oldest terminal allocations first.
	DiskUsageThreshold  float64
	InodeUsageThreshold float64
	// MaxAllocs is how many allocations the node holds before terminal
	// ones are destroyed to make room; it never limits running ones.
	MaxAllocs int
	// ParallelDestroys bounds how many allocations are destroyed at once.
	ParallelDestroys int

	// DiskUsage reads the allocation directory's file system; nil means
	// statfs(2) of Config.AllocDir. Tests fake a disk that fills.
	DiskUsage func() (DiskUsage, error)
}

// DiskUsage is how full a file system is, in percent.
type DiskUsage struct {
	UsedPercent       float64
	InodesUsedPercent float64
}

func (g GCConfig) withDefaults() GCConfig {
	if g.Interval <= 0 {
		g.Interval = DefaultGCInterval
	}
	if g.DiskUsageThreshold <= 0 {
		g.DiskUsageThreshold = DefaultGCDiskUsageThreshold
	}
	if g.InodeUsageThreshold <= 0 {
		g.InodeUsageThreshold = DefaultGCInodeUsageThreshold
	}
	if g.MaxAllocs <= 0 {
		g.MaxAllocs = DefaultGCMaxAllocs
	}
	if g.ParallelDestroys <= 0 {
		g.ParallelDestroys = DefaultGCParallelDestroys
	}
	return g
}

// ErrNotCollectable is CollectAllocation's answer for an allocation the
// client does not hold or that is not terminal, in upstream's words.
//
//lint:ignore ST1005 upstream's text, seen by clients
var ErrNotCollectable = errors.New("No such allocation on client, or allocation not eligible for GC")

// ErrFinalStateUndelivered is CollectAllocation's answer for a terminal
// allocation whose final state the servers have not taken yet: beyond
// upstream, it is kept until they have (see gcCandidates).
var ErrFinalStateUndelivered = errors.New("the servers have not yet taken the allocation's final state; it is kept until they have")

// CollectAll destroys every terminal allocation the collector may destroy
// (gcCandidates), now, whatever the thresholds: upstream's
// /v1/client/gc. It returns how many it destroyed.
func (c *Client) CollectAll() int {
	cands := c.gcCandidates()
	c.logger.Info("forced garbage collection of terminal allocations", "count", len(cands))
	c.destroyForGC(cands)
	return len(cands)
}

// CollectAllocation destroys one terminal allocation now: upstream's
// /v1/client/allocation/:id/gc. A running one, or one the client does not
// hold, is ErrNotCollectable; a terminal one whose final state is not yet
// with the servers is ErrFinalStateUndelivered.
func (c *Client) CollectAllocation(allocID string) error {
	for _, ar := range c.gcCandidates() {
		if ar.ID() == allocID {
			c.destroyForGC([]*allocrunner.AllocRunner{ar})
			return nil
		}
	}
	c.allocMu.RLock()
	ar := c.allocs[allocID]
	c.allocMu.RUnlock()
	if ar != nil && structs.ClientTerminal(ar.ClientStatus()) && !c.updater.delivered(allocID) {
		return fmt.Errorf("allocation %s: %w", allocID, ErrFinalStateUndelivered)
	}
	return ErrNotCollectable
}

// collectGarbagePeriodically runs the collector every interval, and at
// once when new allocations push the node over MaxAllocs (c.gc.kick).
func (c *Client) collectGarbagePeriodically() {
	c.gc = c.periodic(c.cfg.GC.Interval, func() time.Duration {
		c.collectGarbage()
		return c.cfg.GC.Interval
	})
}

// collectGarbage destroys terminal allocations, oldest first: as many as
// hold the node over MaxAllocs, then one at a time while the disk is
// over a threshold.
func (c *Client) collectGarbage() {
	cands := c.gcCandidates()
	over := c.NumAllocs() - c.cfg.GC.MaxAllocs
	if over > 0 {
		n := min(over, len(cands))
		c.logger.Debug("garbage collecting terminal allocations over gc_max_allocs", "count", n, "max", c.cfg.GC.MaxAllocs)
		c.destroyForGC(cands[:n])
		cands = cands[n:]
	}
	for len(cands) > 0 {
		u, err := c.diskUsage()
		if err != nil {
			c.logger.Warn("garbage collector cannot read the allocation directory's disk usage", "error", err)
			return
		}
		if u.UsedPercent <= c.cfg.GC.DiskUsageThreshold && u.InodesUsedPercent <= c.cfg.GC.InodeUsageThreshold {
			return
		}
		c.logger.Debug("garbage collecting a terminal allocation: disk over threshold",
			"alloc_id", cands[0].ID(), "disk_used_percent", u.UsedPercent, "inodes_used_percent", u.InodesUsedPercent)
		c.destroyForGC(cands[:1])
		cands = cands[1:]
	}
}

func (c *Client) diskUsage() (DiskUsage, error) {
	if f := c.cfg.GC.DiskUsage; f != nil {
		return f()
	}
	d, ok := statDisk(c.cfg.AllocDir)
	if !ok {
		return DiskUsage{}, fmt.Errorf("statfs %s failed", c.cfg.AllocDir)
	}
	return DiskUsage{UsedPercent: d.UsedPercent, InodesUsedPercent: d.InodesPercent}, nil
}

// gcCandidates are the allocations the collector may destroy, the one
// that ended first first: terminal, every task dead, and their final
// state taken by the servers. An allocation whose end the servers have not
// heard (the link is down) is kept: destroyed, it would leave them
// believing it runs, and its record is what reports it once they answer.
func (c *Client) gcCandidates() []*allocrunner.AllocRunner {
	c.allocMu.RLock()
	runners := make([]*allocrunner.AllocRunner, 0, len(c.allocs))
	for _, ar := range c.allocs {
		runners = append(runners, ar)
	}
	c.allocMu.RUnlock()
	type cand struct {
		ar    *allocrunner.AllocRunner
		ended time.Time
	}
	var out []cand
	for _, ar := range runners {
		if !structs.ClientTerminal(ar.ClientStatus()) || !c.updater.delivered(ar.ID()) {
			continue
		}
		select {
		case <-ar.WaitCh():
		default:
			continue
		}
		out = append(out, cand{ar: ar, ended: endedAt(ar.Alloc())})
	}
	slices.SortFunc(out, func(a, b cand) int {
		return cmp.Or(a.ended.Compare(b.ended), cmp.Compare(a.ar.ID(), b.ar.ID()))
	})
	ars := make([]*allocrunner.AllocRunner, len(out))
	for i, c := range out {
		ars[i] = c.ar
	}
	return ars
}

// endedAt is when the allocation's last task finished.
func endedAt(a *structs.Allocation) time.Time {
	var t time.Time
	for _, ts := range a.TaskStates {
		if ts != nil && ts.FinishedAt.After(t) {
			t = ts.FinishedAt
		}
	}
	return t
}

// destroyForGC destroys runners, at most ParallelDestroys at a time, and
// waits for them. Each leaves the client's map first and is remembered
// as finished, so the servers' listing of it does not pull it again.
func (c *Client) destroyForGC(ars []*allocrunner.AllocRunner) {
	sem := make(chan struct{}, c.cfg.GC.ParallelDestroys)
	var wg sync.WaitGroup
	for _, ar := range ars {
		c.allocMu.Lock()
		if c.allocs[ar.ID()] != ar {
			c.allocMu.Unlock()
			continue // the servers removed it meanwhile
		}
		delete(c.allocs, ar.ID())
		c.finished[ar.ID()] = ar.AllocModifyIndex()
		c.destroyWG.Add(1)
		c.allocMu.Unlock()
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done(); c.destroyWG.Done() }()
			ar.Destroy()
			c.updater.forget(ar.ID())
			c.reapStandbys(ar.ID())
			c.logger.Info("garbage collected terminal allocation", "alloc_id", ar.ID())
		}()
	}
	wg.Wait()
}
