// Package rawexec implements the "raw_exec" task driver: it runs a task's
// command as a plain host process, with the client's privileges (or, for a
// root client, the task's `user`) and no isolation, which is what small
// edge nodes without container runtimes need. Where the client is root and
// the host has cgroups, each task gets one for accounting (stats) and
// clean-up; nothing is limited.
//
// Each task is the leader of its own process group, so stopping a task
// signals everything it forked, not just the first process. Because the
// driver runs inside the client (no executor process per task), a task
// outlives a client restart as an orphan; the handle records the pid, the
// process group, the kernel's start time of the process and its cgroup, so a new client
// can re-attach, and can tell its task from an unrelated process that was
// given the same pid since. A re-attached task is no longer the client's
// child, so its exit is observed through a pidfd (or, on kernels without
// pidfd, by polling /proc) and its exit status is reported as unknown.
//
// What raw_exec shares with exec (the handle and its checks, re-attaching,
// the exit watch, stop, signals, inspection, stats) is the process core's,
// internal/proctask; this package owns its config, how a task's process is
// forked (user, working directory, environment, cgroup, OOM score) and how
// FindTask recognises a task by its environment.
//
// The driver is off unless the agent configuration enables it:
//
//	plugin "raw_exec" {
//	  config {
//	    enabled = true
//	  }
//	}
package rawexec
