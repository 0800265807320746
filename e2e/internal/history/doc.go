// Package history is the chaos run's record of what its clients asked the
// servers and what they answered, and the checker of that record.
//
// A History holds Ops: one call of the HTTP API by one worker, with its
// invocation and completion time (nanoseconds since the run began), what
// it asked and what it got back. An Op whose answer never came (a
// timeout, a reset connection, a 5xx) has the Unknown outcome: the write
// may or may not have happened, and the checker must allow both.
//
// Check decides, per key (a job, a variable, a node), whether the ops are
// linearizable with github.com/anishathalye/porcupine against a sequential
// model of that kind of object, and checks the invariants an operator
// relies on besides: no acknowledged write lost, no non-stale read older
// than a write that completed before it began, versions and indexes only
// increasing, one leader per raft term, no two acknowledged writes at one
// raft index, and no stale read of a value nobody wrote. A violation names
// the key and the smallest slice of the history that shows it; Visualize
// writes porcupine's HTML view of the whole history, kept as the run's
// artifact.
//
// It knows nothing of processes or networks: the chaos run in e2e/cluster
// records the ops, this package judges them, and its tests feed it
// histories with known faults to prove it sees them.
package history
