package upstreamstate

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/upstreamstate/upstreamstatetest"
)

// fixtureDir is the fixture's data_dir (see testdata/README.md).
func fixtureDir(t testing.TB) string { return upstreamstatetest.DataDir(t) }

const (
	fixtureNode   = upstreamstatetest.NodeID
	fixtureSecret = upstreamstatetest.SecretID
)

func TestRead_Fixture(t *testing.T) {
	dir := fixtureDir(t)
	before := snapshotFiles(t, dir)
	node, err := Read(dir, Options{})
	must.NoError(t, err)
	must.Eq(t, before, snapshotFiles(t, dir), must.Sprint("Read changed the data_dir"))

	must.Eq(t, fixtureNode, node.NodeID)
	secret, err := os.ReadFile(filepath.Join(dir, SecretIDFile))
	must.NoError(t, err)
	must.Eq(t, string(secret), node.SecretID)
	must.Len(t, 3, node.Allocs)

	type want struct {
		task, driver, state string
		pid, executor, run  int
		failed              bool
		finished            bool
	}
	cases := []struct {
		id, name, job, group, ack string
		tasks                     []want
	}{
		{"38eaf9d5-d942-8d5d-615a-04dffedca171", "sleeper.g[0]", "sleeper", "g", "running", []want{
			{task: "t", driver: "raw_exec", state: "running", pid: 4852, executor: 4830, run: 4852},
		}},
		{"8b9b2c68-9cca-c9e2-c65d-316dfc53108e", "oneshot.b[0]", "oneshot", "b", "complete", []want{
			// A task that exited keeps the handle of its last run: the PID
			// is reported, RunningPID is not.
			{task: "done", driver: "raw_exec", state: "dead", pid: 5236, executor: 5194, finished: true},
		}},
		{"b322839c-f90f-1d95-d18d-063a265cfaf8", "mixed.m[0]", "mixed", "m", "running", []want{
			{task: "raw", driver: "raw_exec", state: "running", pid: 5128, executor: 5074, run: 5128},
			// mock_driver runs its tasks inside the agent: no process.
			{task: "mock", driver: "mock_driver", state: "running"},
			{task: "isolated", driver: "exec", state: "running", pid: 6897, executor: 6884, run: 6897},
		}},
	}
	for i, c := range cases {
		a := node.Allocs[i]
		must.Eq(t, c.id, a.ID)
		must.Eq(t, c.name, a.Name)
		must.Eq(t, c.job, a.JobID)
		must.Eq(t, c.job, a.JobName)
		must.Eq(t, c.group, a.TaskGroup)
		must.Eq(t, "default", a.Namespace)
		must.Eq(t, "run", a.DesiredStatus)
		must.Eq(t, c.ack, a.ClientStatus)
		must.Len(t, len(c.tasks), a.Tasks)
		for j, w := range c.tasks {
			tk := a.Tasks[j]
			must.Eq(t, w.task, tk.Name)
			must.Eq(t, w.driver, tk.Driver)
			must.Eq(t, w.state, tk.State)
			must.Eq(t, w.failed, tk.Failed)
			must.Eq(t, uint64(0), tk.Restarts)
			must.Eq(t, w.run, tk.RunningPID())
			must.False(t, tk.StartedAt.IsZero())
			must.Eq(t, w.finished, !tk.FinishedAt.IsZero())
			must.NotNil(t, tk.Handle)
			must.Eq(t, 1, tk.Handle.Version)
			must.True(t, strings.HasPrefix(tk.Handle.TaskID, a.ID+"/"+w.task+"/"), must.Sprint(tk.Handle.TaskID))
			must.Eq(t, w.pid, tk.Handle.PID)
			must.Eq(t, w.executor, tk.Handle.ExecutorPID)
			must.Positive(t, tk.Handle.DriverStateSize)
			if w.executor != 0 {
				must.Eq(t, "unix", tk.Handle.ExecutorNetwork)
				must.True(t, strings.HasPrefix(tk.Handle.ExecutorAddr, "/tmp/plugin"))
				// The driver's start (the executor's, to the
				// millisecond) precedes the task's, which the client
				// records once StartTask has returned.
				must.False(t, tk.Handle.StartedAt.IsZero())
				must.True(t, !tk.Handle.StartedAt.After(tk.StartedAt))
				must.Less(t, time.Second, tk.StartedAt.Sub(tk.Handle.StartedAt))
			}
		}
	}
}

// snapshotFiles is every file under dir with its contents and mode.
func snapshotFiles(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	must.NoError(t, filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[p] = fi.Mode().String() + ":" + string(b)
		}
		return nil
	}))
	return out
}

func TestRead_IDFiles(t *testing.T) {
	cases := []struct {
		name, file, content string
		want                string // in the error; "" for success
	}{
		{"newline accepted", NodeIDFile, fixtureNode + "\n", ""},
		{"empty node ID", NodeIDFile, "", `"" is not a UUID`},
		{"not a UUID", NodeIDFile, "0b453850-c5c6-eace-e80a-f3e9d6f2de1x", "is not a UUID"},
		{"too long", SecretIDFile, strings.Repeat("a", 4096), "bytes or more"},
		{"two lines", SecretIDFile, fixtureSecret + "\n\n", "is not a UUID"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := fixtureDir(t)
			must.NoError(t, os.WriteFile(filepath.Join(dir, c.file), []byte(c.content), 0o600))
			_, err := Read(dir, Options{})
			if c.want == "" {
				must.NoError(t, err)
				return
			}
			must.ErrorContains(t, err, c.want)
			must.ErrorContains(t, err, filepath.Join(dir, c.file))
			var fe *FormatError
			must.True(t, errors.As(err, &fe))
		})
	}

	t.Run("no node ID", func(t *testing.T) {
		dir := fixtureDir(t)
		must.NoError(t, os.Remove(filepath.Join(dir, NodeIDFile)))
		_, err := Read(dir, Options{})
		must.ErrorIs(t, err, ErrNotUpstream)
	})
	t.Run("no secret", func(t *testing.T) {
		dir := fixtureDir(t)
		must.NoError(t, os.Remove(filepath.Join(dir, SecretIDFile)))
		_, err := Read(dir, Options{})
		must.ErrorIs(t, err, os.ErrNotExist)
		must.ErrorContains(t, err, "secret-id")
	})
	t.Run("node ID is a directory", func(t *testing.T) {
		dir := fixtureDir(t)
		p := filepath.Join(dir, NodeIDFile)
		must.NoError(t, os.Remove(p))
		must.NoError(t, os.Mkdir(p, 0o700))
		_, err := Read(dir, Options{})
		must.ErrorContains(t, err, "not a regular file")
	})
	t.Run("no state.db", func(t *testing.T) {
		dir := fixtureDir(t)
		must.NoError(t, os.Remove(filepath.Join(dir, StateFile)))
		_, err := Read(dir, Options{})
		must.ErrorIs(t, err, os.ErrNotExist)
	})
}
