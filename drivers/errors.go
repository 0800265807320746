package drivers

import (
	"errors"
	"fmt"
)

var (
	// ErrTaskNotFound is returned when a driver does not know the task ID, or
	// when RecoverTask finds that the task's process no longer exists (or its
	// PID now belongs to another process). The task runner treats it as "the
	// task is gone", not as a driver failure.
	ErrTaskNotFound = errors.New("task not found")

	// ErrTaskExists is returned by StartTask when the task ID is already
	// tracked: starting it twice would leave an orphan the client cannot stop.
	ErrTaskExists = errors.New("task already exists")

	// ErrTaskRunning is returned by DestroyTask without force for a task that
	// has not exited, so that a caller cannot drop a live workload by mistake.
	ErrTaskRunning = errors.New("task is still running")

	// ErrDriverDisabled is returned by StartTask of a driver that the agent
	// configuration has not enabled.
	ErrDriverDisabled = errors.New("driver is disabled")

	// ErrUnknownDriver is returned by Catalog.New for a name nobody registered.
	ErrUnknownDriver = errors.New("unknown driver")

	// ErrDriverExists is returned by Catalog.Register for a duplicate name.
	ErrDriverExists = errors.New("driver already registered")

	// ErrInvalidHandle is returned by RecoverTask when the persisted handle
	// cannot be decoded or belongs to another driver or handle version.
	ErrInvalidHandle = errors.New("invalid task handle")

	// ErrUnknownSignal is returned for a signal name the driver cannot send.
	ErrUnknownSignal = errors.New("unknown signal")

	// ErrExitCodeUnknown is the Err of an ExitResult for a task whose exit
	// could be observed but whose exit status could not: a process recovered
	// after a client restart is no longer the client's child, so only its
	// parent (usually init) can read the status.
	ErrExitCodeUnknown = errors.New("exit code unknown: task was re-attached after a client restart")
)

// RecoverableError marks an error with whether retrying the same operation
// may succeed. Restart policies read it: a start that failed because of a
// transient condition is retried, a start that can never succeed (bad config,
// missing binary) fails the task at once.
type RecoverableError struct {
	Err         error
	Recoverable bool
}

// NewRecoverableError wraps err with its recoverability. A nil err stays nil
// so that callers can wrap a result unconditionally.
func NewRecoverableError(err error, recoverable bool) error {
	if err == nil {
		return nil
	}
	return &RecoverableError{Err: err, Recoverable: recoverable}
}

func (e *RecoverableError) Error() string {
	if e.Err == nil {
		return "<nil>"
	}
	return e.Err.Error()
}

// Unwrap exposes the wrapped error to errors.Is and errors.As.
func (e *RecoverableError) Unwrap() error { return e.Err }

// IsRecoverable reports whether err, or any error it wraps, is a
// RecoverableError marked recoverable. Errors that carry no marking are not
// recoverable: retrying an operation nobody vouched for risks a restart loop.
func IsRecoverable(err error) bool {
	var re *RecoverableError
	if errors.As(err, &re) {
		return re.Recoverable
	}
	return false
}

// ErrInvalidConfig is wrapped by every ConfigError so that callers can tell a
// configuration mistake (fix the job) from a runtime failure (retry).
var ErrInvalidConfig = errors.New("invalid driver config")

// ErrMissingKey is the cause of a ConfigError for a required key that is
// absent.
var ErrMissingKey = errors.New("required key is missing")

// ErrUnknownKey is the cause of a ConfigError for a key the driver does not
// implement. Unknown keys are errors rather than ignored so that a typo, or an
// upstream option this implementation lacks, is never silently dropped.
var ErrUnknownKey = errors.New("unknown key")

// ConfigError is a problem with one key of a driver or task config block.
// errors.Is matches both ErrInvalidConfig and the cause.
type ConfigError struct {
	Key string
	Err error
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("config %q: %v", e.Key, e.Err)
}

// Unwrap makes errors.Is(err, ErrInvalidConfig) and errors.Is(err, cause)
// both hold.
func (e *ConfigError) Unwrap() []error { return []error{ErrInvalidConfig, e.Err} }
