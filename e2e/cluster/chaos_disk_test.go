package cluster

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/nomad-edge/nomad/e2e/internal/harness"
)

// The chaos run's faults of a server's disk: a kill -9 while raft writes a
// snapshot, a follower whose disk fills up, and one whose writes fail
// with I/O errors. The chaos servers take a snapshot every 64 entries and
// keep 64 behind it (chaosRaftSettings), so snapshots are written all
// through a run and a server that was down a while catches up from the
// leader's snapshot rather than its log.

// chaosRaftSettings go into the chaos servers' server block.
const chaosRaftSettings = `
  raft_snapshot_threshold = 64
  raft_snapshot_interval  = "1s"
  raft_trailing_logs      = 64
`

// chaosDiskSize is the size of the small disk the disk faults' server
// keeps its data dir on: roomy for a run's raft log and snapshots, small
// enough to fill at once.
const chaosDiskSize = "256m"

// smallDisk is the server whose data dir is on its own disk, the one the
// disk faults strike.
func (c *chaos) smallDisk() *harness.Agent { return c.nc.servers[len(c.nc.servers)-1] }

// mountSmallDisk puts smallDisk's data dir on a disk of chaosDiskSize
// that the disk faults can strike. It runs before the agents start.
func (c *chaos) mountSmallDisk() {
	c.t.Helper()
	c.disk = harness.MountDisk(c.t, c.smallDisk().DataDir, chaosDiskSize)
}

// diskFault strikes smallDisk's disk when it is a running follower: it
// fills to the last byte, or every write to it (raft's log, its
// snapshots, the state the agent keeps) fails with EIO while reads go on.
// The heal of the servers' fault gives the disk back. Meanwhile the
// follower cannot store what the leader sends it: it must refuse it,
// crash nothing, and catch up once its disk works again.
func (c *chaos) diskFault() {
	c.healServers()
	s := c.smallDisk()
	if !s.Running() || c.leader() == s {
		return
	}
	c.serverFault = c.disk.Heal
	if c.rng.IntN(2) == 0 {
		c.disk.Fail(unix.EIO)
		c.logf("disk-eio", "%s (every write fails with EIO)", s.Name)
		return
	}
	n, err := c.disk.Fill()
	if err != nil {
		c.logf("disk-full", "%s: %v", s.Name, err)
		return
	}
	c.logf("disk-full", "%s (%d MiB written to fill it)", s.Name, n>>20)
}

// kill9Snapshot kills a random server with SIGKILL the moment raft starts
// writing a snapshot (its <id>.tmp directory appears), or, when none is
// started within 10 s, wherever it is. The server must come back on its
// last complete snapshot and log.
func (c *chaos) kill9Snapshot() {
	if c.serversDown() > 0 {
		c.startDown()
		return
	}
	s := c.nc.servers[c.rng.IntN(len(c.nc.servers))]
	if !s.Running() {
		return
	}
	caught, err := killOnSnapshot(s, 10*time.Second)
	c.down[s] = true
	switch {
	case err != nil:
		c.logf("kill9-server", "%s (watching its snapshots failed: %v)", s.Name, err)
	case caught != "":
		c.logf("kill9-snapshot", "%s while it wrote %s", s.Name, caught)
	default:
		c.logf("kill9-server", "%s (no snapshot started within 10s)", s.Name)
	}
}

// killOnSnapshot watches s's raft snapshot directory with inotify and
// kills s when a snapshot's temporary directory is created, returning its
// name; after timeout it kills s anyway and returns "".
func killOnSnapshot(s *harness.Agent, timeout time.Duration) (string, error) {
	defer s.Kill9()
	dir := filepath.Join(s.DataDir, "server", "raft", "snapshots")
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_CREATE); err != nil {
		return "", fmt.Errorf("watching %s: %w", dir, err)
	}
	deadline := time.Now().Add(timeout)
	buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for left := time.Until(deadline); left > 0; left = time.Until(deadline) {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if _, err := unix.Poll(pfd, int(left.Milliseconds())+1); err != nil && !errors.Is(err, unix.EINTR) {
			return "", err
		}
		n, err := unix.Read(fd, buf)
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return "", err
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := strings.TrimRight(string(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+int(ev.Len)]), "\x00")
			off += unix.SizeofInotifyEvent + int(ev.Len)
			if strings.HasSuffix(name, ".tmp") {
				s.Kill9()
				return name, nil
			}
		}
	}
	return "", nil
}
