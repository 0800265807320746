package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/e2e/internal/harness"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// mustNotPanic fails if an agent's log shows a Go panic or crash.
func mustNotPanic(t *testing.T, a *harness.Agent) {
	t.Helper()
	log := a.Log()
	for _, sign := range []string{"panic:", "goroutine ", "fatal error:"} {
		must.StrNotContains(t, log, sign, must.Sprintf("%s crashed instead of reporting an error", a.Name))
	}
}

// A second agent on a data dir in use exits at once with an error that
// names the data dir and the PID of the agent holding it; the first keeps
// running. Both a server and a client-only agent are refused.
func TestBadInput_TwoAgentsOneDataDir(t *testing.T) {
	// Mostly waiting on single processes: these run side by side.
	t.Parallel()
	c := newCluster(t, clusterOpts{servers: 1, clients: 1})
	c.startServers()
	c.startClients()

	for _, first := range []*harness.Agent{c.servers[0], c.clients[0]} {
		cfg, err := os.ReadFile(first.CfgPath)
		must.NoError(t, err)
		p := harness.FreePorts(t)
		// The same file with other ports: only the data dir is shared.
		second := strings.NewReplacer(
			fmt.Sprintf("http = %d", first.Ports.HTTP), fmt.Sprintf("http = %d", p.HTTP),
			fmt.Sprintf("rpc  = %d", first.Ports.RPC), fmt.Sprintf("rpc  = %d", p.RPC),
			fmt.Sprintf("serf = %d", first.Ports.Serf), fmt.Sprintf("serf = %d", p.Serf),
		).Replace(string(cfg))
		must.StrContains(t, second, first.DataDir)
		dup := c.agents.Add(harness.AgentConfig{Name: first.Name + "-again", Ports: p, Config: second})
		dup.Start()
		code := dup.WaitExit(15 * time.Second)
		must.NotEq(t, 0, code, must.Sprintf("a second agent on %s must not run", first.DataDir))
		must.StrContains(t, dup.Log(), fmt.Sprintf("data_dir %s is in use by another agent (pid %d)", first.DataDir, first.PID()))
		mustNotPanic(t, dup)
		must.True(t, first.Running(), must.Sprintf("%s keeps running", first.Name))
	}
	c.waitLeader(5*time.Second, "")
}

// Servers that disagree on bootstrap_expect never bootstrap: no leader
// appears, and each server's log says why.
func TestBadInput_BootstrapExpectDisagrees(t *testing.T) {
	// Mostly waiting on single processes: these run side by side.
	t.Parallel()
	c := newCluster(t, clusterOpts{servers: 3, expect: func(i int) int { return []int{3, 3, 5}[i] }})
	for _, s := range c.servers {
		s.Start()
	}
	wait.Poll(t, 20*time.Second, "every server logs the disagreement", func() (bool, string) {
		var missing []string
		for _, s := range c.servers {
			if !strings.Contains(s.Log(), "servers disagree on bootstrap_expect") {
				missing = append(missing, s.Name)
			}
		}
		return len(missing) == 0, fmt.Sprintf("no disagreement logged by %v", missing)
	})
	// Serf has seen all three: a cluster that would bootstrap has done so
	// by now. Watch a few election timeouts longer to be sure none does.
	harness.Hold(t, 4*time.Second, "no leader among servers that disagree", func() error {
		for _, s := range c.servers {
			if !s.Running() {
				return fmt.Errorf("%s exited", s.Name)
			}
			if l := s.Leader(); l != "" {
				return fmt.Errorf("%s names leader %s", s.Name, l)
			}
		}
		return nil
	})
	for _, s := range c.servers {
		must.StrContains(t, s.Log(), "peer_bootstrap_expect=")
		mustNotPanic(t, s)
	}
}

// A damaged raft.db (garbled pages, or cut short) or server ID file stops
// the server at start with an error naming the file, and a non-zero exit;
// never a panic. Put back, the same files start the server with its job.
func TestBadInput_CorruptRaftFile(t *testing.T) {
	// Mostly waiting on single processes: these run side by side.
	t.Parallel()
	c := newCluster(t, clusterOpts{servers: 1})
	s := c.servers[0]
	c.startServers()
	_, _, err := s.API().Jobs().Register(sleepJob("kept", 1), nil)
	must.NoError(t, err)
	s.Stop()

	path := filepath.Join(s.DataDir, "server", "raft", "raft.db")
	good, err := os.ReadFile(path)
	must.NoError(t, err)
	page := os.Getpagesize()
	must.Greater(t, 3*page, len(good), must.Sprint("raft.db holds more than its meta pages"))

	garbled := append([]byte{}, good...)
	for i := 2 * page; i < len(garbled); i++ {
		garbled[i] = byte(i*31 + 7)
	}
	for _, damage := range []struct {
		name string
		data []byte
	}{
		{"garbled pages", garbled},
		{"cut short", good[:page+page/2]},
	} {
		must.NoError(t, os.WriteFile(path, damage.data, 0o600))
		s.Start()
		code := s.WaitExit(20 * time.Second)
		must.NotEq(t, 0, code, must.Sprintf("%s: the server must not run", damage.name))
		must.StrContains(t, s.Log(), "raft store "+path)
		mustNotPanic(t, s)
	}

	must.NoError(t, os.WriteFile(path, good, 0o600))

	// The server's raft ID file, garbled, is refused too: a server that
	// made up a new ID would be a stranger to its own raft log.
	idPath := filepath.Join(s.DataDir, "server", "node-id")
	id, err := os.ReadFile(idPath)
	must.NoError(t, err)
	must.NoError(t, os.WriteFile(idPath, []byte("\x00\x01not an id"), 0o600))
	s.Start()
	must.NotEq(t, 0, s.WaitExit(20*time.Second))
	must.StrContains(t, s.Log(), "server ID file "+idPath+" is corrupt")
	mustNotPanic(t, s)
	must.NoError(t, os.WriteFile(idPath, id, 0o600))

	c.startServers()
	job, _, err := s.API().Jobs().Info("kept", nil)
	must.NoError(t, err)
	must.Eq(t, "kept", *job.ID)
}

var retryLine = regexp.MustCompile(`(?m)^(\S+) \[(\w+)\] +agent\.client: failed to register node; will retry: retry_in=`)

// A client whose servers are all unreachable keeps running and retrying,
// and says so at INFO when the outage starts and then at doubling
// intervals: not a line per attempt, nor a tight loop that floods the log.
func TestBadInput_ClientWithoutServers(t *testing.T) {
	// Mostly waiting on single processes: these run side by side.
	t.Parallel()
	c := newCluster(t, clusterOpts{})
	// Ports nobody listens on: taken free, then left closed.
	dead := []string{strconv.Quote(fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))), strconv.Quote(fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t)))}
	p := harness.Ports{HTTP: harness.FreePort(t)}
	cl := c.agents.Add(harness.AgentConfig{Name: "lonely-client", Ports: p, Config: clientConfig("lonely-client", "127.0.0.1", p, dead)})
	cl.Start()

	const window = 8 * time.Second
	harness.Hold(t, window, "the client keeps running without servers", func() error {
		if !cl.Running() {
			return fmt.Errorf("exited with code %d", cl.ExitCode())
		}
		return nil
	})
	lines := retryLine.FindAllStringSubmatch(cl.Log(), -1)
	// Logged at the start, then after 1, 2 and 4 more seconds of outage
	// (at the next attempt past each): 3 to 5 lines in 8s, where a line
	// per attempt would be 8 and a tight loop thousands.
	must.Between(t, 2, len(lines), 5, must.Sprintf("retry lines in %v:\n%s", window, cl.Log()))
	var prev, prevGap time.Duration
	var first time.Time
	for i, l := range lines {
		must.Eq(t, "INFO", l[2], must.Sprintf("logged at INFO: %q", l[0]))
		at, err := time.Parse(time.RFC3339Nano, l[1])
		must.NoError(t, err)
		if i == 0 {
			first = at
			continue
		}
		since := at.Sub(first)
		// The next attempt past each doubling comes within a retry
		// (about a second, jittered) of it.
		must.GreaterEq(t, prevGap-1200*time.Millisecond, since-prev, must.Sprintf("the gaps between lines grow: %q", lines))
		prevGap, prev = since-prev, since
	}
	// Each line says what failed and where.
	last := lines[len(lines)-1][0]
	line := cl.Log()[strings.Index(cl.Log(), last):]
	line, _, _ = strings.Cut(line, "\n")
	u0, _ := strconv.Unquote(dead[0])
	u1, _ := strconv.Unquote(dead[1])
	must.True(t, strings.Contains(line, u0) || strings.Contains(line, u1), must.Sprintf("the line names a server: %s", line))
	mustNotPanic(t, cl)
}

// A client whose state file is damaged while it is stopped starts anyway:
// the file is moved aside, the node keeps its ID (from the identity file
// beside it), and the allocation placed on it is still one allocation
// running the one task process it had, re-attached, not a second copy.
func TestBadInput_CorruptClientState(t *testing.T) {
	c := newCluster(t, clusterOpts{servers: 1, clients: 1})
	c.startServers()
	c.startClients()
	before := c.registerJob(c.servers[0], sleepJob("sleep", 1))
	cl := c.clients[0]
	nodes, _, err := c.servers[0].API().Nodes().List(nil)
	must.NoError(t, err)
	must.Len(t, 1, nodes)

	cl.Stop()
	path := filepath.Join(cl.DataDir, "client", "client", "state.db")
	buf, err := os.ReadFile(path)
	must.NoError(t, err)
	for i := 2 * os.Getpagesize(); i < len(buf); i++ {
		buf[i] = byte(i*31 + 7)
	}
	must.NoError(t, os.WriteFile(path, buf, 0o600))
	cl.Start()
	wait.Poll(t, 20*time.Second, "the damaged state file reported", func() (bool, string) {
		cl.MustNotHaveDied()
		return strings.Contains(cl.Log(), "client state file was damaged"), "no report yet"
	})
	mustNotPanic(t, cl)

	wait.Poll(t, 30*time.Second, "one node, ready, with its old ID", func() (bool, string) {
		now, _, err := c.servers[0].API().Nodes().List(nil)
		if err != nil {
			return false, err.Error()
		}
		return len(now) == 1 && now[0].ID == nodes[0].ID && now[0].Status == "ready", fmt.Sprintf("%d nodes", len(now))
	})
	harness.Hold(t, 5*time.Second, "one task process for the job", func() error {
		for _, r := range before {
			if pids := harness.AllocPIDs(r.AllocID); len(pids) > 1 {
				return fmt.Errorf("alloc %s has task processes %v", r.AllocID[:8], pids)
			}
		}
		allocs, _, err := c.servers[0].API().Jobs().Allocations("sleep", false, nil)
		if err != nil {
			return err
		}
		running := 0
		for _, a := range allocs {
			if a.ClientStatus == "running" {
				running++
			}
		}
		if running > 1 {
			return fmt.Errorf("%d allocations running", running)
		}
		return nil
	})
	// The client re-attached to the task it had started: same allocation,
	// same process, no restart, and the start time the servers held, to
	// the nanosecond (derived from the process table it would be 0.75 s
	// early on a machine that booted three quarters into a second).
	now, err := c.tasks("sleep")
	must.NoError(t, err)
	must.MapLen(t, 1, now)
	for id, r := range before {
		got, ok := now[id]
		must.True(t, ok, must.Sprintf("alloc %s still the job's allocation: %s", id[:8], describe(now)))
		must.Eq(t, r.PID, got.PID)
		must.Eq(t, 0, got.Restarts)
		must.True(t, got.StartedAt.Equal(r.StartedAt), must.Sprintf("started at %s, was %s", got.StartedAt, r.StartedAt))
	}
}
