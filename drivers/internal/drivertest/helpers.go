package drivertest

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"golang.org/x/sys/unix"

	"github.com/nomad-edge/nomad/drivers"
)

// FIFOLines makes path (a task's stdout, say) a FIFO and streams the lines
// written to it. The test holds it open read-write, so that a driver's open
// for writing never blocks and a task's line arrives the moment it is
// written: how tests learn that a task reached a point, without sleeping.
func FIFOLines(t *testing.T, path string) <-chan string {
	t.Helper()
	must.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	must.NoError(t, unix.Mkfifo(path, 0o666))
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	must.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return lines
}

// NextLine returns the next line of lines, or fails the test after timeout.
func NextLine(t *testing.T, lines <-chan string, timeout time.Duration) string {
	t.Helper()
	select {
	case l, ok := <-lines:
		must.True(t, ok, must.Sprint("output closed before the expected line"))
		return l
	case <-time.After(timeout):
		t.Fatalf("no output line within %s", timeout)
		return ""
	}
}

// WaitExit returns the exit result of task id, or fails the test after
// timeout: hitting it means a lost exit, not a slow machine.
func WaitExit(t *testing.T, d drivers.Driver, id string, timeout time.Duration) *drivers.ExitResult {
	t.Helper()
	ch, err := d.WaitTask(context.Background(), id)
	must.NoError(t, err)
	select {
	case res, ok := <-ch:
		must.True(t, ok, must.Sprint("wait channel closed without a result"))
		return res
	case <-time.After(timeout):
		t.Fatalf("task %s did not exit within %s", id, timeout)
		return nil
	}
}

// Persisted round-trips h through JSON, as the client's state database
// does, so that recovery is tested on what actually survives a restart.
func Persisted(t *testing.T, h *drivers.TaskHandle) *drivers.TaskHandle {
	t.Helper()
	b, err := json.Marshal(h)
	must.NoError(t, err)
	var out drivers.TaskHandle
	must.NoError(t, json.Unmarshal(b, &out))
	return &out
}

// Args is a list of strings as a config block that came through JSON has
// it: []any.
func Args(ss ...string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
