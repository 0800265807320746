//go:build linux

package proc

import (
	"fmt"
	"os/exec"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/testutil/wait"
)

// Without a pidfd the watcher reads /proc once per interval of its clock,
// so an exit is seen at the next tick and not before: a node with many
// recovered tasks polls at the pace its operator chose. The real clock
// runs on the bubble's fake time here.
func TestWatch_PollsOnItsClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cmd := exec.Command("sleep", "30")
		must.NoError(t, cmd.Start())
		st, err := ReadStat(cmd.Process.Pid)
		must.NoError(t, err)
		w, err := Watch(cmd.Process.Pid, st.StartTime, WatchOptions{PollInterval: time.Second, NoPidfd: true})
		must.NoError(t, err)
		defer w.Close()
		must.False(t, w.HasPidfd())

		done := make(chan bool, 1)
		go func() { done <- w.Wait() }()
		synctest.Wait() // the watcher is asleep until its next tick
		must.NoError(t, cmd.Process.Kill())
		_ = cmd.Wait() // reaped: its /proc entry is gone
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("the exit was seen before the clock ticked")
		default:
		}
		time.Sleep(time.Second)
		synctest.Wait()
		select {
		case exited := <-done:
			must.True(t, exited)
		default:
			t.Fatal("the exit was not seen at the tick")
		}
	})
}

// A task killed while no client watched it stays a zombie until someone
// reaps it, and on a machine whose init does not reap (a container) that
// may be never. Re-attaching to it would only "recover" a dead task;
// Watch says it is gone, so the client restarts it as a task that died
// while the agent was down ("Offline reboot" in
// docs/concepts/disconnected-clients.md).
func TestWatch_ZombieIsGone(t *testing.T) {
	for _, noPidfd := range []bool{false, true} {
		cmd := exec.Command("sleep", "30")
		must.NoError(t, cmd.Start())
		st, err := ReadStat(cmd.Process.Pid)
		must.NoError(t, err)
		must.NoError(t, cmd.Process.Kill())
		wait.Poll(t, 10*time.Second, "the killed process to become a zombie", func() (bool, string) {
			now, err := ReadStat(cmd.Process.Pid)
			return err == nil && now.Exited(), fmt.Sprintf("%+v, %v", now, err)
		})
		_, err = Watch(cmd.Process.Pid, st.StartTime, WatchOptions{NoPidfd: noPidfd})
		must.ErrorIs(t, err, ErrGone, must.Sprintf("noPidfd=%v", noPidfd))
		_ = cmd.Wait()
	}
}
