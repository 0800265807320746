package agent

import (
	"os"
	"strconv"
	"testing"

	"github.com/shoenig/test/must"
)

// A second agent on a data dir in use fails and names the process holding
// it, instead of corrupting the first agent's raft log and client state.
func TestLockDataDir_SecondHolderRefused(t *testing.T) {
	dir := t.TempDir()
	l, err := lockDataDir(dir)
	must.NoError(t, err)

	_, err = lockDataDir(dir)
	must.ErrorContains(t, err, "is in use by another agent (pid "+strconv.Itoa(os.Getpid())+")")

	l.release()
	l2, err := lockDataDir(dir)
	must.NoError(t, err, must.Sprint("released, the data dir can be taken again"))
	l2.release()
}
