// Package proc reads what the drivers that run host processes (raw_exec,
// exec) need from Linux's /proc: a process's state and start tick, the boot
// ID, and the exit of a process that is not the client's child (through a
// pidfd, or by polling /proc on kernels without one).
//
// A pid alone does not name a process for long: once reaped, the kernel may
// hand it to another. A pid with its start tick (field 22 of its stat) and
// the boot ID names one process for the lifetime of the node, which is what a
// re-attaching client checks before it signals anything.
package proc
