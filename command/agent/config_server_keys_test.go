package agent

import (
	"net"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/shoenig/test/must"
)

// server.job_max_count, upstream's key, reaches the server's config, and
// a value out of range is refused naming the key: it used to be refused
// as unsupported.
func TestConfig_JobMaxCount(t *testing.T) {
	c, err := ParseConfig("agent.hcl", []byte("server {\n  job_max_count = 1234\n}\n"))
	must.NoError(t, err)
	must.Eq(t, 1234, c.Server.JobMaxCount)

	_, err = ParseConfig("agent.hcl", []byte("server {\n  job_max_count = -1\n}\n"))
	must.ErrorContains(t, err, "server.job_max_count")
}

// The raft snapshot keys reach the server's raft: threshold, interval and
// trailing logs as written, upstream's defaults when absent, and a
// negative count refused by name.
func TestConfig_RaftSnapshotKeys(t *testing.T) {
	c, err := ParseConfig("agent.hcl", []byte("server {\n  enabled = true\n  raft_snapshot_threshold = 64\n  raft_snapshot_interval = \"2s\"\n  raft_trailing_logs = 32\n}\n"))
	must.NoError(t, err)
	must.Eq(t, 64, c.Server.RaftSnapshotThreshold)
	must.Eq(t, 2*time.Second, c.Server.RaftSnapshotInterval)
	must.Eq(t, 32, c.Server.RaftTrailingLogs)
	sc, err := (&Agent{config: DefaultConfig().Merge(c), logger: hclog.NewNullLogger(), dataDir: t.TempDir()}).serverConfig(net.ParseIP("127.0.0.1"))
	must.NoError(t, err)
	must.Eq(t, uint64(64), sc.RaftSnapshotThreshold)
	must.Eq(t, 2*time.Second, sc.RaftSnapshotInterval)
	must.Eq(t, uint64(32), sc.RaftTrailingLogs)

	def, err := ParseConfig("agent.hcl", []byte("server {\n  enabled = true\n}\n"))
	must.NoError(t, err)
	sc, err = (&Agent{config: DefaultConfig().Merge(def), logger: hclog.NewNullLogger(), dataDir: t.TempDir()}).serverConfig(net.ParseIP("127.0.0.1"))
	must.NoError(t, err)
	must.Eq(t, uint64(8192), sc.RaftSnapshotThreshold)
	must.Eq(t, 120*time.Second, sc.RaftSnapshotInterval)
	must.Eq(t, uint64(10240), sc.RaftTrailingLogs)

	_, err = ParseConfig("agent.hcl", []byte("server {\n  raft_trailing_logs = -1\n}\n"))
	must.ErrorContains(t, err, "server.raft_trailing_logs")
}
