package drivers

import (
	"encoding/json"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// TestRecoverableError checks that recoverability survives further wrapping,
// because the task runner sees driver errors wrapped by its own context.
func TestRecoverableError(t *testing.T) {
	base := errors.New("fork: resource temporarily unavailable")
	err := fmt.Errorf("starting task: %w", NewRecoverableError(base, true))
	must.True(t, IsRecoverable(err))
	must.ErrorIs(t, err, base)
	must.EqError(t, err, "starting task: fork: resource temporarily unavailable")

	must.False(t, IsRecoverable(NewRecoverableError(base, false)))
	must.False(t, IsRecoverable(base))
	must.NoError(t, NewRecoverableError(nil, true))
}

// TestExitResult checks that only a clean exit counts as success, since a
// signal or an unknown status must trigger restart policy.
func TestExitResult(t *testing.T) {
	must.True(t, (&ExitResult{}).Successful())
	must.False(t, (*ExitResult)(nil).Successful())
	must.False(t, (&ExitResult{ExitCode: 1}).Successful())
	must.False(t, (&ExitResult{Signal: 9}).Successful())
	must.False(t, (&ExitResult{Err: ErrExitCodeUnknown}).Successful())

	r := SignalExitResult(syscall.SIGKILL)
	must.Eq(t, 137, r.ExitCode)
	must.Eq(t, 9, r.Signal)
	must.Eq(t, "exit code 137, signal 9", r.String())
}

// TestParseSignal checks the spellings operators use for kill_signal and
// that a typo is an error rather than another signal.
func TestParseSignal(t *testing.T) {
	for name, want := range map[string]syscall.Signal{
		"":        syscall.SIGTERM,
		"SIGTERM": syscall.SIGTERM,
		"sigint":  syscall.SIGINT,
		"HUP":     syscall.SIGHUP,
		"SIGUSR1": syscall.SIGUSR1,
		"SIGKILL": syscall.SIGKILL,
	} {
		got, err := ParseSignal(name)
		must.NoError(t, err)
		must.Eq(t, want, got, must.Sprint(name))
	}
	_, err := ParseSignal("SIGTERN")
	must.ErrorIs(t, err, ErrUnknownSignal)
}

// TestTaskHandle_Persist checks that a handle survives the JSON round trip
// the client's state DB puts it through, driver state included.
func TestTaskHandle_Persist(t *testing.T) {
	h := &TaskHandle{
		Version: 2,
		Config: &TaskConfig{
			ID:     "alloc/web",
			Env:    map[string]string{"A": "1"},
			Config: map[string]any{"command": "sleep", "args": []any{"1"}},
		},
		State:     TaskStateRunning,
		StartedAt: time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC),
	}
	type state struct{ Pid int }
	must.NoError(t, h.SetDriverState(state{Pid: 42}))

	b, err := json.Marshal(h)
	must.NoError(t, err)
	var got TaskHandle
	must.NoError(t, json.Unmarshal(b, &got))
	must.Eq(t, h, &got)

	var st state
	must.NoError(t, got.GetDriverState(&st))
	must.Eq(t, 42, st.Pid)

	// A copy shares nothing mutable.
	c := h.Copy()
	c.Config.Env["A"] = "2"
	c.DriverState[0] = 'x'
	must.Eq(t, "1", h.Config.Env["A"])
	must.Eq(t, byte('{'), h.DriverState[0])

	must.ErrorIs(t, (&TaskHandle{}).GetDriverState(&st), ErrInvalidHandle)
}

type fakeDriver struct{ Driver }

// TestCatalog checks registration by name: duplicates are refused so that
// which driver runs never depends on registration order, unknown names are
// an error, and a factory's error is returned with the driver named.
func TestCatalog(t *testing.T) {
	c := NewCatalog()
	must.NoError(t, c.Register("fake", func(Options) (Driver, error) { return fakeDriver{}, nil }))
	must.ErrorIs(t, c.Register("fake", func(Options) (Driver, error) { return nil, nil }), ErrDriverExists)
	must.Error(t, c.Register("", nil))
	must.NoError(t, c.Register("broken", func(Options) (Driver, error) { return nil, ErrInvalidConfig }))
	must.Eq(t, []string{"broken", "fake"}, c.Names())

	d, err := c.New("fake", Options{})
	must.NoError(t, err)
	must.Eq(t, Driver(fakeDriver{}), d)

	_, err = c.New("nope", Options{})
	must.ErrorIs(t, err, ErrUnknownDriver)
	_, err = c.New("broken", Options{})
	must.ErrorIs(t, err, ErrInvalidConfig)
	must.StrContains(t, err.Error(), `"broken"`)
}

// TestNewTaskHandle checks that a new handle is running, carries its own
// copy of the config without the Events callback (which is never
// persisted), and its driver state as JSON, so that every driver's
// StartTask and FindTask hand the client the same shape.
func TestNewTaskHandle(t *testing.T) {
	cfg := &TaskConfig{ID: "a/web", Env: map[string]string{"K": "v"}, Events: func(string) {}}
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	h, err := NewTaskHandle(3, cfg, at, map[string]int{"pid": 42})
	must.NoError(t, err)
	must.Eq(t, 3, h.Version)
	must.Eq(t, TaskStateRunning, h.State)
	must.Eq(t, at, h.StartedAt)
	must.Nil(t, h.Config.Events)
	must.NotNil(t, cfg.Events)
	h.Config.Env["K"] = "changed"
	must.Eq(t, "v", cfg.Env["K"])
	var st map[string]int
	must.NoError(t, h.GetDriverState(&st))
	must.Eq(t, 42, st["pid"])

	_, err = NewTaskHandle(1, cfg, at, func() {})
	must.Error(t, err)
}
