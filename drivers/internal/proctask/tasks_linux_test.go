//go:build linux

package proctask

import (
	"encoding/json"
	"os/exec"
	"strconv"
	"syscall"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/drivers"
)

// startSleep starts `sleep 30` as a task of ts, leading its own group as
// the drivers' tasks do.
func startSleep(t *testing.T, ts *Tasks, id string) *drivers.TaskHandle {
	t.Helper()
	h, err := ts.Start(StartInput{
		Config:  &drivers.TaskConfig{ID: id, Name: "web"},
		Command: "sleep",
		Launch: func() (*exec.Cmd, State, error) {
			cmd := exec.Command("sleep", "30")
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := cmd.Start(); err != nil {
				return nil, State{}, err
			}
			st, err := Launched(cmd, nil)
			return cmd, st, err
		},
	})
	must.NoError(t, err)
	t.Cleanup(func() { _ = ts.Destroy(id, true) })
	return h
}

// A handle exec wrote before it shared raw_exec's layout has no pgid; a
// new agent reads it as the pid (the task leads its own group) and
// re-attaches, so that upgrading the agent does not lose running exec tasks.
func TestRecover_HandleWithoutPgid(t *testing.T) {
	ts := New(Options{HandleVersion: 1})
	h := startSleep(t, ts, "a/web")

	var raw map[string]any
	must.NoError(t, json.Unmarshal(h.DriverState, &raw))
	pid := int(raw["pid"].(float64))
	delete(raw, "pgid")
	old := h.Copy()
	must.NoError(t, old.SetDriverState(raw))

	again := New(Options{HandleVersion: 1})
	must.NoError(t, again.Recover(old))
	t.Cleanup(func() { _ = again.Destroy("a/web", true) })
	st, err := again.Inspect("a/web")
	must.NoError(t, err)
	must.Eq(t, strconv.Itoa(pid), st.DriverAttributes["pgid"])
	must.Eq(t, drivers.TaskStateRunning, st.State)
}

// A handle without cgroups is refused by a driver whose tasks always have
// them (exec's limits live there), before any pid is looked at.
func TestRecover_RequireCgroups(t *testing.T) {
	ts := New(Options{HandleVersion: 1})
	h := startSleep(t, ts, "a/web")
	strict := New(Options{HandleVersion: 1, RequireCgroups: true})
	must.ErrorIs(t, strict.Recover(h), drivers.ErrInvalidHandle)
}
