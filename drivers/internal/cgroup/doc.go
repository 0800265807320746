// Package cgroup manages the cgroup a driver gives each task, on cgroup v1
// (one directory per controller hierarchy, under nomad/) and v2 (one
// directory under nomad.slice/): creating it with the task's limits, moving
// the task into it, reading what the kernel counts there (CPU time, memory,
// OOM kills) and removing it once the task is destroyed. The exec driver
// enforces limits with it; raw_exec only accounts.
//
// A Cgroups value is plain data, persisted in the task handle, so that an
// agent that re-attached to a task after a restart reads and cleans up the
// same directories.
package cgroup
