// Package proctask is the one core of the drivers that run a task as a host
// process inside the agent (raw_exec, exec): how a started process is
// tracked and waited for, the DriverState they persist and how a handle is
// decoded and checked (boot ID, then pid and start tick) before anything is
// signalled, the exit watch of a re-attached process, the stop (signal,
// SIGKILL after the timeout, the leftovers of the task's group and cgroup),
// signals, inspection, stats and destruction. The driver's clock is given
// once, in Options, and paces all of it.
//
// A driver owns what differs: its config, how it builds and starts the
// process (plain fork, or its init in new namespaces), its cgroups and
// limits, and how FindTask finds a task without a handle. It calls into
// this package, never the other way; this package calls proc, cgroup,
// stats and tasks.
package proctask
