package harness

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/testutil/wait"
)

// KillTasks finds a task by the mark in its environment and kills it: the
// cleanup every suite relies on to leave no task of a test behind.
func TestKillTasks_ByEnvironmentMark(t *testing.T) {
	id := fmt.Sprintf("harness-test-%d", os.Getpid())
	cmd := exec.Command("/bin/sleep", "300")
	cmd.Env = []string{"NOMAD_ALLOC_ID=" + id, "OTHER=1"}
	must.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })

	must.Eq(t, []int{cmd.Process.Pid}, AllocPIDs(id))
	must.SliceEmpty(t, AllocPIDs(id[:len(id)-1]), must.Sprint("a prefix of the ID is another allocation"))
	KillTasks(AllocMark(id))
	wait.Poll(t, 5*time.Second, "the task gone", func() (bool, string) {
		select {
		case <-exited:
			return true, ""
		default:
			return false, "still running"
		}
	})
	must.False(t, Alive(cmd.Process.Pid))
}
