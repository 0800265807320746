package agenttest

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nomad-edge/nomad/command/agent"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// Agent is a running dev agent.
type Agent struct {
	*agent.Agent

	// HTTPAddr is the API's base URL, e.g. "http://127.0.0.1:38211".
	HTTPAddr string
}

// NewDevAgent starts a dev agent and waits until its node is registered
// and ready, so a job submitted right away can be placed. configure, when
// not nil, adjusts the config before start. The agent is shut down (its
// tasks killed) when the test ends. Agent logs go to the test log at the
// level in NOMAD_TEST_LOG_LEVEL (default WARN).
func NewDevAgent(t testing.TB, configure func(*agent.Config)) *Agent {
	t.Helper()
	cfg := agent.DevConfig()
	cfg.Ports.HTTP = 0
	cfg.Ports.RPC = 0
	cfg.DataDir = t.TempDir()
	cfg.NodeName = "test-" + strings.ReplaceAll(strings.ToLower(t.Name()), "/", "-")
	cfg.Server.NumSchedulers = 2
	cfg.LogLevel = "WARN"
	if configure != nil {
		configure(cfg)
	}

	out := &testLogWriter{t: t}
	level := hclog.LevelFromString(envOr("NOMAD_TEST_LOG_LEVEL", cfg.LogLevel))
	logger := hclog.New(&hclog.LoggerOptions{Name: "agent", Level: level, Output: out})

	a, err := agent.NewAgent(cfg, logger)
	if err != nil {
		t.Fatalf("starting dev agent: %v", err)
	}
	t.Cleanup(func() {
		if err := a.Shutdown(); err != nil {
			t.Errorf("shutting down dev agent: %v", err)
		}
		out.close()
	})
	ta := &Agent{Agent: a, HTTPAddr: a.HTTPScheme() + "://" + a.HTTPAddr().String()}

	if c := a.Client(); c != nil {
		select {
		case <-c.Ready():
		case <-time.After(30 * time.Second):
			t.Fatalf("dev agent's client did not register within 30s")
		}
		wait.Poll(t, 30*time.Second, "the dev agent's node to be ready", func() (bool, string) {
			node, err := a.Server().State().NodeByID(nil, c.NodeID())
			if err != nil {
				return false, err.Error()
			}
			if node == nil {
				return false, "node not registered"
			}
			return node.Status == structs.NodeStatusReady, "node status " + node.Status
		})
	}
	return ta
}

// testLogWriter sends agent logs to the test log until the test ends;
// logging to a finished test panics, and late log lines from shutting
// down goroutines are of no use anyway.
type testLogWriter struct {
	t      testing.TB
	mu     sync.Mutex
	closed bool
}

var _ io.Writer = (*testLogWriter)(nil)

func (w *testLogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (w *testLogWriter) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// String describes the agent in failure messages.
func (a *Agent) String() string { return fmt.Sprintf("dev agent at %s", a.HTTPAddr) }
