// Package tasks holds the bookkeeping every in-process driver needs for the
// tasks it runs: a per-task exit latch that WaitTask, StopTask and InspectTask
// read, an ID-keyed set with the Driver contract's not-found and
// already-exists errors, the check of a handle RecoverTask is given
// (Set.OpenHandle), the stop of a task with real processes (Escalate: the
// kill signal, SIGKILL after the timeout, the kill wait, on the driver's
// clock), and WaitTask, StopTask and DestroyTask over the set for drivers
// whose tasks can stop and release themselves (all the built-in ones).
// Keeping it in one place means the drivers agree on exactly-once exit
// delivery, on error values and on what stopping and destroying a running
// task take. It imports drivers and helper/clock, no driver.
package tasks
