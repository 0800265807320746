// Package mock implements the "mock_driver" task driver: tasks that run no
// process and exit, fail or resist being stopped exactly as their config
// says. It exists so that the client, the scheduler and whole in-process
// clusters can be tested (and load-tested) without real workloads.
//
// Config keys follow upstream's mock driver: run_for, exit_code, exit_signal,
// exit_err_msg, start_error, start_error_recoverable, start_block_for,
// kill_after, stdout_string, stdout_repeat, stdout_repeat_duration. Any other
// key is an error naming it.
//
// A task costs one timer while it runs (plus one per pending stop or stdout
// repeat) and no goroutine, so thousands fit in a test. All timing goes
// through a Clock; the default one is the time package, which
// testing/synctest fakes, so tests can cover minutes of task life in
// microseconds without sleeping.
package mock
