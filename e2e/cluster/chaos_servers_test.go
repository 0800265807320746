package cluster

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/nomad-edge/nomad/e2e/internal/harness"
	"github.com/nomad-edge/nomad/e2e/internal/history"
)

// The chaos run's faults between servers, and the check of its history.
// One fault between servers at a time (c.serverFault); a kill or a pause
// may come on top of it.

// leader is the running server that says it leads, nil when none does.
func (c *chaos) leader() *harness.Agent {
	for _, s := range c.nc.servers {
		if s.Running() && s.Leader() == s.RPCAddr() {
			return s
		}
	}
	return nil
}

// follower is a running server other than the leader, nil when none.
func (c *chaos) follower() *harness.Agent {
	l := c.leader()
	var out []*harness.Agent
	for _, s := range c.nc.servers {
		if s.Running() && s != l {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out[c.rng.IntN(len(out))]
}

// serverCut applies fault to the server, after healing the one before.
func (c *chaos) serverCut(kind string, s *harness.Agent, fault harness.Fault) {
	c.healServers()
	if s == nil {
		return
	}
	c.serverFault = c.nc.fab.Apply(s.Name, fault)
	c.logf(kind, "%s %s", s.Name, fault.Name)
}

// healServers heals the fault between servers in force.
func (c *chaos) healServers() {
	if c.serverFault == nil {
		return
	}
	c.serverFault()
	c.serverFault = nil
	c.logf("heal-servers", "")
}

// isolateLeader cuts the leader off from the followers; clients and the
// test reach both sides. The followers elect a new leader; the old one
// must stop acknowledging writes.
func (c *chaos) isolateLeader() {
	l := c.leader()
	if l == nil {
		return
	}
	c.serverCut("isolate-leader", l, harness.Isolate(otherServers(c.nc, l)...))
}

// minorityPartition puts a follower and half the clients on one side,
// the other servers and clients on the other.
func (c *chaos) minorityPartition() {
	f := c.follower()
	if f == nil {
		return
	}
	peers := otherServers(c.nc, f)
	for i, cl := range c.nc.clients {
		if i%2 == 1 {
			peers = append(peers, cl.Name)
		}
	}
	c.serverCut("minority", f, harness.Isolate(peers...))
}

// oneWayDrop makes one server deaf to the others while they still hear
// it: the leader that cannot hear its followers' answers, or a follower
// that cannot hear the leader and keeps calling elections.
func (c *chaos) oneWayDrop() {
	s := c.leader()
	if c.rng.IntN(2) == 0 {
		s = c.follower()
	}
	if s == nil {
		return
	}
	c.serverCut("one-way", s, harness.DropFrom(otherServers(c.nc, s)...))
}

// pauseLeader stops the leader with SIGSTOP for longer than the election
// timeout, then resumes it: it comes back believing it leads, and must
// not acknowledge a write before it learns otherwise.
func (c *chaos) pauseLeader() {
	l := c.leader()
	if l == nil {
		return
	}
	pause := time.Duration(2000+c.rng.IntN(4000)) * time.Millisecond
	l.Signal(syscall.SIGSTOP)
	time.Sleep(pause) // the pause is the fault
	l.Signal(syscall.SIGCONT)
	c.logf("pause-leader", "%s for %v", l.Name, pause)
}

// kill9Server kills a random server with SIGKILL, in the middle of
// whatever it was writing; it is started again by a later fault or the
// settle.
func (c *chaos) kill9Server() {
	if c.serversDown() > 0 {
		c.startDown()
		return
	}
	s := c.nc.servers[c.rng.IntN(len(c.nc.servers))]
	s.Kill9()
	c.down[s] = true
	c.logf("kill9-server", "%s", s.Name)
}

// checkHistory checks the workers' history, writes it and porcupine's
// view of it under -chaos.artifacts, and fails the run on a violation,
// with the seed and the slice of the history that shows it.
func (c *chaos) checkHistory() {
	c.t.Helper()
	if v := c.judgeHistory(); v != "" {
		c.fatalf("%s", v)
	}
}

// artifactsDir is where the run keeps what it recorded: -chaos.artifacts,
// or a new temporary directory; "" when neither can be made.
func (c *chaos) artifactsDir() string {
	if c.artifacts != "" {
		return c.artifacts
	}
	dir := *chaosOut
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", fmt.Sprintf("nomad-chaos-%d-", c.seed)); err != nil {
			c.t.Logf("keeping the history: %v", err)
			return ""
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		c.t.Logf("keeping the history: %v", err)
		return ""
	}
	c.artifacts = dir
	return dir
}

// judgeHistory checks the history and keeps it; it returns the
// violations found, "" when none.
func (c *chaos) judgeHistory() string {
	ops, samples := c.w.h.Ops(), c.w.h.Samples()
	began := time.Now()
	r := history.Check(ops, samples, 2*time.Minute)
	if dir := c.artifactsDir(); dir != "" {
		view := filepath.Join(dir, fmt.Sprintf("chaos-%d.html", c.seed))
		if err := r.Visualize(view); err != nil {
			c.t.Logf("porcupine's view: %v", err)
		}
		if buf, err := json.MarshalIndent(ops, "", " "); err == nil {
			_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("chaos-%d-history.json", c.seed)), buf, 0o644)
		}
		c.t.Logf("chaos history: %s (porcupine's view: %s)", dir, view)
	}
	c.t.Logf("chaos seed %d: %d ops checked on %d keys in %v (linearizable: %s; on the history narrowed to the unanswered writes some read saw: %s), %d leader samples; ops %v",
		c.seed, r.Checked, r.Keys, time.Since(began).Round(time.Millisecond), r.Linearizable, r.Narrowed, len(samples), history.Counts(ops))
	if len(r.Violations) == 0 {
		return ""
	}
	var b strings.Builder
	for _, v := range r.Violations {
		b.WriteString("\n  " + v.String())
	}
	return fmt.Sprintf("chaos seed %d: the history shows %d violations:%s", c.seed, len(r.Violations), b.String())
}
