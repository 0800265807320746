// Package tasks holds the bookkeeping every in-process driver needs for the
// tasks it runs: a per-task exit latch that WaitTask, StopTask and InspectTask
// read, an ID-keyed set with the Driver contract's not-found and
// already-exists errors, and WaitTask, StopTask and DestroyTask over that set
// for drivers whose tasks can stop and release themselves (raw_exec, exec).
// Keeping it in one place means the drivers agree on exactly-once exit
// delivery, on error values and on what destroying a running task takes.
package tasks
