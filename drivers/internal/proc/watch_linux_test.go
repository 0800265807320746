//go:build linux

package proc

import (
	"os/exec"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoenig/test/must"
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
