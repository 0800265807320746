package agent_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nomad-edge/nomad/testutil/wait"

	"github.com/hashicorp/go-hclog"
	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// edgeCluster is a server-only dev agent and a client-only agent that
// dialled it, the client's own HTTP API closed: everything the test
// reaches on the node goes through the session the node opened.
type edgeCluster struct {
	server *agenttest.Agent
	edge   *agent.Agent
	api    *nomadapi.Client
}

func newEdgeCluster(t *testing.T, configure func(*agent.Config)) *edgeCluster {
	t.Helper()
	srv := agenttest.NewDevAgent(t, func(c *agent.Config) {
		c.Client.Enabled = false
		if configure != nil {
			configure(c)
		}
	})
	edge := clientOnlyAgent(t, "edge-nat", srv, func(cfg *agent.Config) {
		cfg.Plugins = []*agent.PluginConfig{{Name: "raw_exec", Config: map[string]any{"enabled": true}}}
		if configure != nil {
			configure(cfg)
		}
	})
	t.Cleanup(func() { _ = edge.Client().Destroy() })
	edge.CloseHTTPForTest()
	c, err := nomadapi.NewClient(&nomadapi.Config{Address: srv.HTTPAddr})
	must.NoError(t, err)
	wait.Poll(t, 30*time.Second, "the edge node's session on the server", func() (bool, string) {
		return srv.Server().HasNodeConn(edge.Client().NodeID()), "no session yet"
	})
	return &edgeCluster{server: srv, edge: edge, api: c}
}

// runRaw runs a one-task raw_exec job on the edge node and returns its
// allocation once the task runs.
func (ec *edgeCluster) runRaw(t *testing.T, id, script string) *nomadapi.Allocation {
	t.Helper()
	job := mockJob(id, "raw_exec", map[string]any{"command": "/bin/sh", "args": []string{"-c", script}})
	_, _, err := ec.api.Jobs().Register(job, nil)
	must.NoError(t, err)
	var allocID string
	wait.Poll(t, 30*time.Second, "the task running on the edge node", func() (bool, string) {
		allocs, _, err := ec.api.Jobs().Allocations(id, false, nil)
		if err != nil {
			return false, err.Error()
		}
		if len(allocs) != 1 || allocs[0].ClientStatus != "running" {
			return false, describeStubs(allocs)
		}
		allocID = allocs[0].ID
		return true, ""
	})
	alloc, _, err := ec.api.Allocations().Info(allocID, nil)
	must.NoError(t, err)
	return alloc
}

// `alloc logs -f` must work for a node behind NAT: the servers cannot
// dial it (its HTTP API is closed here), so the log streams through the
// session the node opened to the server.
func TestClientAPI_FollowLogsThroughNodeSession(t *testing.T) {
	ec := newEdgeCluster(t, nil)
	alloc := ec.runRaw(t, "nat-logs", `i=0; while true; do echo "tick $i"; i=$((i+1)); sleep 0.1; done`)

	cancel := make(chan struct{})
	defer close(cancel)
	frames, errs := ec.api.AllocFS().Logs(alloc, true, "web", "stdout", "start", 0, cancel, nil)
	var got bytes.Buffer
	deadline := time.After(30 * time.Second)
	for !strings.Contains(got.String(), "tick 5\n") {
		select {
		case f := <-frames:
			if f != nil {
				got.Write(f.Data)
			}
		case err := <-errs:
			t.Fatalf("log stream failed after %q: %v", got.String(), err)
		case <-deadline:
			t.Fatalf("log stream did not reach tick 5 in 30s; got %q", got.String())
		}
	}
	must.StrHasPrefix(t, "tick 0\ntick 1\n", got.String())
}

// The allocation's files are readable with the official client, and a
// path that leads out of the allocation directory is refused: the client
// runs as root, and the fs API must never become a way to read the host.
func TestClientAPI_FSConfinedToAllocDir(t *testing.T) {
	ec := newEdgeCluster(t, nil)
	alloc := ec.runRaw(t, "nat-fs", `echo hello > local/greeting; ln -s /etc local/etc-link; sleep 300`)
	fs := ec.api.AllocFS()
	wait.Poll(t, 30*time.Second, "the task's file", func() (bool, string) {
		files, _, err := fs.List(alloc, "/web/local", nil)
		if err != nil {
			return false, err.Error()
		}
		return len(files) == 2, fmt.Sprintf("%d files", len(files))
	})
	root, _, err := fs.List(alloc, "/", nil)
	must.NoError(t, err)
	names := map[string]bool{}
	for _, f := range root {
		names[f.Name] = f.IsDir
	}
	must.True(t, names["alloc"])
	must.True(t, names["web"])

	st, _, err := fs.Stat(alloc, "web/local/greeting", nil)
	must.NoError(t, err)
	must.Eq(t, 6, st.Size)
	rc, err := fs.Cat(alloc, "web/local/greeting", nil)
	must.NoError(t, err)
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(rc)
	rc.Close()
	must.Eq(t, "hello\n", buf.String())
	rc, err = fs.ReadAt(alloc, "web/local/greeting", 1, 3, nil)
	must.NoError(t, err)
	buf.Reset()
	_, _ = buf.ReadFrom(rc)
	rc.Close()
	must.Eq(t, "ell", buf.String())

	for _, p := range []string{"../../../etc/passwd", "web/../../etc", "web/local/etc-link/passwd"} {
		_, _, err := fs.Stat(alloc, p, nil)
		must.ErrorContains(t, err, "400", must.Sprintf("path %q", p))
		rc, err := fs.Cat(alloc, p, nil)
		if err == nil {
			rc.Close()
		}
		must.ErrorContains(t, err, "400", must.Sprintf("path %q", p))
	}
	_, _, err = fs.Stat(alloc, "/etc/passwd", nil)
	must.ErrorContains(t, err, "404") // rooted at the alloc dir, which has no etc
}

// Restart, signal and stats reach the task through the node's session,
// as the official client calls them.
func TestClientAPI_RestartSignalStats(t *testing.T) {
	ec := newEdgeCluster(t, nil)
	alloc := ec.runRaw(t, "nat-life", `trap 'echo got-hup' HUP; echo started; while true; do sleep 0.1; done`)
	allocs := ec.api.Allocations()

	stats, err := allocs.Stats(alloc, nil)
	must.NoError(t, err)
	must.MapContainsKey(t, stats.Tasks, "web")
	must.Positive(t, stats.Tasks["web"].ResourceUsage.MemoryStats.RSS)
	must.MapNotEmpty(t, stats.Tasks["web"].Pids)

	// A signal that beats the shell to its trap kills it (and the task
	// restarts): wait until the trap is set.
	waitForLog(t, ec, alloc, "started")
	must.NoError(t, allocs.Signal(alloc, nil, "web", "SIGHUP"))
	waitForLog(t, ec, alloc, "got-hup")

	must.NoError(t, allocs.Restart(alloc, "web", nil))
	wait.Poll(t, 30*time.Second, "the task restarted once", func() (bool, string) {
		a, _, err := allocs.Info(alloc.ID, nil)
		if err != nil {
			return false, err.Error()
		}
		ts := a.TaskStates["web"]
		if ts == nil {
			return false, "no task state"
		}
		return ts.Restarts == 1 && ts.State == "running", fmt.Sprintf("restarts=%d state=%s", ts.Restarts, ts.State)
	})
	waitForLog(t, ec, alloc, "got-hup\nstarted\n")

	err = allocs.Signal(alloc, nil, "web", "SIGNOPE")
	must.ErrorContains(t, err, "400")
	err = allocs.Restart(alloc, "nope", nil)
	must.ErrorContains(t, err, "404")
}

func waitForLog(t *testing.T, ec *edgeCluster, alloc *nomadapi.Allocation, want string) {
	t.Helper()
	wait.Poll(t, 30*time.Second, "the task's stdout to hold "+want, func() (bool, string) {
		cancel := make(chan struct{})
		defer close(cancel)
		frames, errs := ec.api.AllocFS().Logs(alloc, false, "web", "stdout", "start", 0, cancel, nil)
		var got bytes.Buffer
		for {
			select {
			case f, ok := <-frames:
				if !ok {
					return strings.Contains(got.String(), want), got.String()
				}
				got.Write(f.Data)
			case err := <-errs:
				if err != nil {
					return false, err.Error()
				}
			}
		}
	})
}

// exec runs a command beside a raw_exec task, in its working directory,
// over the websocket the official client opens, and returns its output
// and exit code; a TTY exec gets a terminal.
func TestClientAPI_ExecRoundTrip(t *testing.T) {
	ec := newEdgeCluster(t, nil)
	alloc := ec.runRaw(t, "nat-exec", `sleep 300`)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var stdout, stderr bytes.Buffer
	code, err := ec.api.Allocations().Exec(ctx, alloc, "web", false,
		[]string{"/bin/sh", "-c", `read line; echo "echo:$line"; echo "task:$NOMAD_TASK_NAME"; pwd; echo oops >&2; exit 7`},
		strings.NewReader("ping\n"), &stdout, &stderr, nil, nil)
	must.NoError(t, err)
	must.Eq(t, 7, code)
	must.StrContains(t, stdout.String(), "echo:ping\n")
	must.StrContains(t, stdout.String(), "task:web\n")
	must.StrContains(t, stdout.String(), "/web\n")
	must.Eq(t, "oops\n", stderr.String())

	stdout.Reset()
	code, err = ec.api.Allocations().Exec(ctx, alloc, "web", true,
		[]string{"/bin/sh", "-c", `if [ -t 0 ]; then echo tty; fi`},
		strings.NewReader(""), &stdout, &stderr, nil, nil)
	must.NoError(t, err)
	must.Eq(t, 0, code)
	must.StrContains(t, stdout.String(), "tty")

	_, err = ec.api.Allocations().Exec(ctx, alloc, "web", false, []string{"/no/such/cmd"},
		strings.NewReader(""), &stdout, &stderr, nil, nil)
	must.ErrorContains(t, err, "no such file")
}

// Without the capability of the operation, the server refuses the
// request before it reaches the node.
func TestClientAPI_ACLRequiresCapability(t *testing.T) {
	ec := newEdgeCluster(t, func(c *agent.Config) { c.ACL = &agent.ACLConfig{Enabled: true} })
	anon, err := nomadapi.NewClient(&nomadapi.Config{Address: ec.server.HTTPAddr})
	must.NoError(t, err)
	mgmtTok, _, err := anon.ACLTokens().Bootstrap(nil)
	must.NoError(t, err)
	ec.api.SetSecretID(mgmtTok.SecretID)
	alloc := ec.runRaw(t, "nat-acl", `echo secret-output; sleep 300`)
	waitForLog(t, ec, alloc, "secret-output")

	_, err = ec.api.ACLPolicies().Upsert(&nomadapi.ACLPolicy{
		Name: "reader", Rules: `namespace "default" { policy = "read" }`,
	}, nil)
	must.NoError(t, err)
	_, err = ec.api.ACLPolicies().Upsert(&nomadapi.ACLPolicy{
		Name: "logs", Rules: "namespace \"default\" {\n  policy = \"read\"\n  capabilities = [\"read-logs\"]\n}\n",
	}, nil)
	must.NoError(t, err)
	readTok, _, err := ec.api.ACLTokens().Create(&nomadapi.ACLToken{Type: "client", Policies: []string{"reader"}}, nil)
	must.NoError(t, err)
	logsTok, _, err := ec.api.ACLTokens().Create(&nomadapi.ACLToken{Type: "client", Policies: []string{"logs"}}, nil)
	must.NoError(t, err)

	reader, err := nomadapi.NewClient(&nomadapi.Config{Address: ec.server.HTTPAddr, SecretID: readTok.SecretID})
	must.NoError(t, err)
	cancel := make(chan struct{})
	defer close(cancel)
	_, errs := reader.AllocFS().Logs(alloc, false, "web", "stdout", "start", 0, cancel, nil)
	err = <-errs
	must.ErrorContains(t, err, "403")
	must.ErrorContains(t, err, "read-logs")
	must.ErrorContains(t, reader.Allocations().Restart(alloc, "web", nil), "alloc-lifecycle")
	_, _, err = reader.AllocFS().List(alloc, "/", nil)
	must.ErrorContains(t, err, "read-fs")
	_, err = reader.Allocations().Exec(context.Background(), alloc, "web", false, []string{"true"},
		strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}, nil, nil)
	must.Error(t, err)

	logsReader, err := nomadapi.NewClient(&nomadapi.Config{Address: ec.server.HTTPAddr, SecretID: logsTok.SecretID})
	must.NoError(t, err)
	ec.api = logsReader
	waitForLog(t, ec, alloc, "secret-output")
}

// The logs block bounds what a task's output takes on the node: files of
// max_file_size MB, the oldest removed beyond max_files, while the logs
// API still reads across the files that remain.
func TestClientAPI_LogRotation(t *testing.T) {
	ec := newEdgeCluster(t, nil)
	job := mockJob("nat-rotate", "raw_exec", map[string]any{"command": "/bin/sh", "args": []string{"-c",
		`head -c 2500000 /dev/zero | tr '\\0' a; echo; echo last-line; sleep 300`}})
	job.TaskGroups[0].Tasks[0].LogConfig = &nomadapi.LogConfig{MaxFiles: new(2), MaxFileSizeMB: new(1)}
	_, _, err := ec.api.Jobs().Register(job, nil)
	must.NoError(t, err)
	var alloc *nomadapi.Allocation
	wait.Poll(t, 30*time.Second, "the task running", func() (bool, string) {
		allocs, _, err := ec.api.Jobs().Allocations("nat-rotate", false, nil)
		if err != nil || len(allocs) != 1 || allocs[0].ClientStatus != "running" {
			return false, fmt.Sprint(err, describeStubs(allocs))
		}
		alloc, _, err = ec.api.Allocations().Info(allocs[0].ID, nil)
		return err == nil, fmt.Sprint(err)
	})
	wait.Poll(t, 30*time.Second, "two rotated stdout files", func() (bool, string) {
		files, _, err := ec.api.AllocFS().List(alloc, "alloc/logs", nil)
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, f := range files {
			if strings.HasPrefix(f.Name, "web.stdout.") {
				seen = append(seen, fmt.Sprintf("%s:%d", f.Name, f.Size))
			}
		}
		return strings.Join(seen, ",") == "web.stdout.1:1048576,web.stdout.2:402859", strings.Join(seen, ",")
	})
	waitForLog(t, ec, alloc, "last-line\n")

	// A FIFO is not a file to read: that would steal the task's output.
	_, err = ec.api.AllocFS().Cat(alloc, "alloc/logs/.web.stdout.fifo", nil)
	must.ErrorContains(t, err, "not a regular file")
}

// startServer starts a server-only agent of a two-server region.
func startServer(t *testing.T, name string) *agent.Agent {
	t.Helper()
	cfg := agent.DefaultConfig()
	cfg.BindAddr = "127.0.0.1"
	cfg.Ports.HTTP, cfg.Ports.RPC, cfg.Ports.Serf = 0, 0, 0
	cfg.DataDir = t.TempDir()
	cfg.NodeName = name
	cfg.Server.Enabled = true
	cfg.Server.BootstrapExpect = 2
	a, err := agent.NewAgent(cfg, hclog.NewNullLogger())
	must.NoError(t, err)
	t.Cleanup(func() { _ = a.Shutdown() })
	return a
}

// A request that reaches a server other than the one the node's session
// lives on is handed to that server over server-to-server RPC, as
// upstream's node-connection forwarding: an operator may ask any server.
func TestClientAPI_ForwardsToServerHoldingSession(t *testing.T) {
	s1, s2 := startServer(t, "s1"), startServer(t, "s2")
	_, err := s2.Server().Join([]string{s1.Server().SerfAddr()})
	must.NoError(t, err)
	wait.Poll(t, 30*time.Second, "a leader", func() (bool, string) {
		return s1.Server().Leader() != "" && s2.Server().Leader() != "", "no leader"
	})

	cfg := agent.DefaultConfig()
	cfg.BindAddr = "127.0.0.1"
	cfg.Ports.HTTP, cfg.Ports.RPC = 0, 0
	cfg.AdvertiseAddrs.HTTP = "127.0.0.1:1"
	cfg.DataDir = t.TempDir()
	cfg.NodeName = "edge-fwd"
	cfg.Client.Enabled = true
	// The node is told of s1 only, but learns s2 from its heartbeats and
	// may open its session to either: the request goes to the other one.
	cfg.Client.Servers = []string{s1.Server().RPCAddr().String()}
	cfg.Plugins = []*agent.PluginConfig{{Name: "raw_exec", Config: map[string]any{"enabled": true}}}
	edge, err := agent.NewAgent(cfg, hclog.NewNullLogger())
	must.NoError(t, err)
	t.Cleanup(func() { _ = edge.Client().Destroy(); _ = edge.Shutdown() })
	var holder, other *agent.Agent
	wait.Poll(t, 30*time.Second, "the node's session on a server", func() (bool, string) {
		switch id := edge.Client().NodeID(); {
		case s1.Server().HasNodeConn(id):
			holder, other = s1, s2
		case s2.Server().HasNodeConn(id):
			holder, other = s2, s1
		}
		return holder != nil, "none yet"
	})
	must.False(t, other.Server().HasNodeConn(edge.Client().NodeID()))

	c2, err := nomadapi.NewClient(&nomadapi.Config{Address: "http://" + other.HTTPAddr().String()})
	must.NoError(t, err)
	ec := &edgeCluster{edge: edge, api: c2}
	alloc := ec.runRaw(t, "fwd-logs", `echo via-s1; sleep 300`)
	waitForLog(t, ec, alloc, "via-s1\n")
	files, _, err := c2.AllocFS().List(alloc, "/", nil)
	must.NoError(t, err)
	must.SliceNotEmpty(t, files)
}

// A node that holds no session (its agent stopped) cannot be reached:
// the server says so, rather than hanging or dialling the node.
func TestClientAPI_NoSessionIsNoPath(t *testing.T) {
	ec := newEdgeCluster(t, nil)
	alloc := ec.runRaw(t, "nat-gone", `sleep 300`)
	// Destroy, not Shutdown, which would leave the task running on the
	// machine after the test (and its cgroup with it).
	must.NoError(t, ec.edge.Client().Destroy())
	must.NoError(t, ec.edge.Shutdown())
	wait.Poll(t, 30*time.Second, "the session gone", func() (bool, string) {
		return !ec.server.Server().HasNodeConn(alloc.NodeID), "still connected"
	})
	_, _, err := ec.api.AllocFS().List(alloc, "/", nil)
	must.ErrorContains(t, err, "503")
	must.ErrorContains(t, err, "No path to node")
}

// An agent whose own client runs the allocation serves it directly (a dev
// agent; a client-only agent asked on the device), and a client-only
// agent asked about another node's allocation hands the request to its
// servers.
func TestClientAPI_AgentsServeOwnAllocsAndPassOnOthers(t *testing.T) {
	dev := agenttest.NewDevAgent(t, nil)
	cfg := agent.DefaultConfig()
	cfg.BindAddr = "127.0.0.1"
	cfg.Ports.HTTP, cfg.Ports.RPC = 0, 0
	cfg.DataDir = t.TempDir()
	cfg.NodeName = "edge-open"
	cfg.Client.Enabled = true
	cfg.Client.Servers = []string{dev.Server().RPCAddr().String()}
	cfg.Plugins = []*agent.PluginConfig{{Name: "raw_exec", Config: map[string]any{"enabled": true}}}
	edge, err := agent.NewAgent(cfg, hclog.NewNullLogger())
	must.NoError(t, err)
	t.Cleanup(func() { _ = edge.Client().Destroy(); _ = edge.Shutdown() })
	devAPI, err := nomadapi.NewClient(&nomadapi.Config{Address: dev.HTTPAddr})
	must.NoError(t, err)
	edgeAPI, err := nomadapi.NewClient(&nomadapi.Config{Address: "http://" + edge.HTTPAddr().String()})
	must.NoError(t, err)
	wait.Poll(t, 30*time.Second, "the edge node's session", func() (bool, string) {
		return dev.Server().HasNodeConn(edge.Client().NodeID()), "none"
	})

	place := func(id, node, word string) *nomadapi.Allocation {
		job := mockJob(id, "raw_exec", map[string]any{"command": "/bin/sh", "args": []string{"-c", "echo " + word + "; sleep 300"}})
		job.Constrain(nomadapi.NewConstraint("${node.unique.name}", "=", node))
		ec := &edgeCluster{api: devAPI}
		_, _, err := devAPI.Jobs().Register(job, nil)
		must.NoError(t, err)
		var alloc *nomadapi.Allocation
		wait.Poll(t, 30*time.Second, id+" running", func() (bool, string) {
			allocs, _, err := ec.api.Jobs().Allocations(id, false, nil)
			if err != nil || len(allocs) != 1 || allocs[0].ClientStatus != "running" {
				return false, fmt.Sprint(err, describeStubs(allocs))
			}
			alloc, _, err = devAPI.Allocations().Info(allocs[0].ID, nil)
			return err == nil, fmt.Sprint(err)
		})
		return alloc
	}
	onDev := place("on-dev", dev.Client().Node().Name, "from-dev")
	onEdge := place("on-edge", "edge-open", "from-edge")

	for _, tc := range []struct {
		api   *nomadapi.Client
		alloc *nomadapi.Allocation
		want  string
	}{
		{devAPI, onDev, "from-dev\n"},    // the dev agent's own client
		{edgeAPI, onEdge, "from-edge\n"}, // the client-only agent's own
		{edgeAPI, onDev, "from-dev\n"},   // passed on to the server
		{devAPI, onEdge, "from-edge\n"},  // through the edge node's session
	} {
		waitForLog(t, &edgeCluster{api: tc.api}, tc.alloc, tc.want)
		// Stats go the same ways; the official client asks the agent it
		// is configured with.
		stats, err := tc.api.Allocations().Stats(tc.alloc, nil)
		must.NoError(t, err)
		must.MapContainsKey(t, stats.Tasks, "web")
	}
}
