// Package tasks holds the bookkeeping every in-process driver needs for the
// tasks it runs: a per-task exit latch that WaitTask, StopTask and InspectTask
// read, and an ID-keyed set with the Driver contract's not-found and
// already-exists errors. Keeping it in one place means raw_exec and
// mock_driver agree on exactly-once exit delivery and on error values.
package tasks
