package mock

import (
	"errors"
	"time"

	"github.com/nomad-edge/nomad/drivers"
)

// taskConfig is a decoded mock task `config` block. It is also persisted in
// the handle's DriverState, so that recovery does not depend on re-decoding
// loosely typed input.
type taskConfig struct {
	// RunFor is how long the task runs before exiting with the Exit*
	// fields; 0 means until stopped.
	RunFor     time.Duration `json:"run_for,omitempty"`
	ExitCode   int           `json:"exit_code,omitempty"`
	ExitSignal int           `json:"exit_signal,omitempty"`
	ExitErrMsg string        `json:"exit_err_msg,omitempty"`

	// StartError makes StartTask fail with this message, recoverable or
	// not, after StartBlockFor.
	StartError            string        `json:"start_error,omitempty"`
	StartErrorRecoverable bool          `json:"start_error_recoverable,omitempty"`
	StartBlockFor         time.Duration `json:"start_block_for,omitempty"`

	// KillAfter is how long the task ignores a stop request; if that is
	// not less than the stop's timeout the driver kills it at the timeout.
	KillAfter time.Duration `json:"kill_after,omitempty"`

	// StdoutString is written to the stdout file when the task starts and
	// StdoutRepeat more times, every StdoutRepeatDuration, while it runs.
	StdoutString         string        `json:"stdout_string,omitempty"`
	StdoutRepeat         int           `json:"stdout_repeat,omitempty"`
	StdoutRepeatDuration time.Duration `json:"stdout_repeat_duration,omitempty"`
}

func decodeTaskConfig(m map[string]any) (taskConfig, error) {
	d := drivers.NewConfigDecoder(m)
	tc := taskConfig{
		RunFor:                d.Duration("run_for"),
		ExitCode:              d.Int("exit_code"),
		ExitSignal:            d.Int("exit_signal"),
		ExitErrMsg:            d.String("exit_err_msg"),
		StartError:            d.String("start_error"),
		StartErrorRecoverable: d.Bool("start_error_recoverable"),
		StartBlockFor:         d.Duration("start_block_for"),
		KillAfter:             d.Duration("kill_after"),
		StdoutString:          d.String("stdout_string"),
		StdoutRepeat:          d.Int("stdout_repeat"),
		StdoutRepeatDuration:  d.Duration("stdout_repeat_duration"),
	}
	if tc.StdoutRepeat < 0 {
		return tc, errors.Join(d.Err(), &drivers.ConfigError{Key: "stdout_repeat", Err: errors.New("must not be negative")})
	}
	return tc, d.Err()
}

// result is how the task ends when run_for elapses.
func (c taskConfig) result() *drivers.ExitResult {
	res := &drivers.ExitResult{ExitCode: c.ExitCode, Signal: c.ExitSignal}
	if c.ExitErrMsg != "" {
		res.Err = errors.New(c.ExitErrMsg)
	}
	return res
}
