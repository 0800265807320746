package nomad

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/shoenig/test/must"
)

// A garbled raft.db is an error naming the file, never the bbolt panic
// that would otherwise kill the agent; a healthy one opens.
func TestOpenRaftStores_CorruptFileIsAnError(t *testing.T) {
	dir := t.TempDir()
	stores, err := openRaftStores(dir, false, hclog.NewNullLogger())
	must.NoError(t, err)
	var logs []*raft.Log
	for i := uint64(1); i <= 200; i++ {
		logs = append(logs, &raft.Log{Index: i, Term: 1, Data: make([]byte, 512)})
	}
	must.NoError(t, stores.log.StoreLogs(logs))
	must.NoError(t, stores.close())

	stores, err = openRaftStores(dir, false, hclog.NewNullLogger())
	must.NoError(t, err)
	must.NoError(t, stores.close())

	path := filepath.Join(dir, "raft.db")
	buf, err := os.ReadFile(path)
	must.NoError(t, err)
	pageSize := os.Getpagesize()
	must.Greater(t, 4*pageSize, len(buf))
	for i := 2 * pageSize; i < len(buf); i++ {
		buf[i] = byte(i*7 + 13)
	}
	must.NoError(t, os.WriteFile(path, buf, 0o600))

	_, err = openRaftStores(dir, false, hclog.NewNullLogger())
	must.ErrorContains(t, err, "raft store "+path+" is corrupt")
}
