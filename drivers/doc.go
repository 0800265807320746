// Package drivers defines the contract between the client's task runner and
// the task drivers that run a task's workload, plus the types both sides share.
//
// Drivers run in the client process: edge nodes are small, so there is no
// plugin subprocess per driver and no helper process per task. A driver must
// therefore be cheap to hold (a goroutine and a few file descriptors per task)
// and must survive the client restarting underneath its tasks: StartTask
// returns a TaskHandle whose DriverState the client persists, and a new client
// process hands it back to RecoverTask to re-attach.
//
// The package owns:
//   - the Driver interface and the task types (TaskConfig, TaskHandle,
//     ExitResult, TaskStatus, Fingerprint);
//   - the sentinel errors callers match with errors.Is, and RecoverableError,
//     which the restart policy reads to decide whether a failed start is worth
//     retrying;
//   - ConfigDecoder, which turns a task's `config` block, as decoded from JSON,
//     msgpack or HCL, into typed values with errors that name the key;
//   - Catalog, a name → factory table. The built-in drivers are registered in
//     the registry subpackage, which imports them; this package imports none.
//
// Implementations live in subpackages: rawexec ("raw_exec") runs host
// processes, exec ("exec") runs them isolated, docker ("docker") runs
// containers through an engine, mock ("mock_driver") fakes tasks for tests
// and load tests. What they share lives once under internal/: tasks (the
// exit latch, the ID set, the handle check, the stop escalation and the
// Driver methods over them), proctask (the one core of raw_exec and exec),
// proc, cgroup, stats and users. Every driver runs the conformance suite
// in internal/drivertest, which holds it to this package's contract.
package drivers
