// Package exec implements the "exec" task driver: it runs a task's command
// isolated from the host, inside the client process like raw_exec, with no
// helper process per task.
//
// A task gets its own mount, UTS and (unless the plugin allows "host" and
// the task asks for it) PID and IPC namespaces; its task directory becomes
// its root, with the host's system directories (upstream's default
// chroot_env) bound into it read-only and the allocation's shared directory
// at /alloc; it runs as its `user`, "nobody" by default, with a bounded
// capability set; and a cgroup of its own (v1 or v2, whichever the host
// has) enforces cpu, memory, memory_max and pids_limit.
//
// Design: to set all that up the driver re-executes the agent's own binary
// (/proc/self/exe) with argv[0] "nomad-exec-init" and the new namespaces
// (clone flags). Init, called first thing by the agent's main, recognises
// that name, waits until the driver has moved it into the task's cgroups,
// reads its instructions from a pipe, makes the mounts in the task's
// private mount namespace, pivots into the root, drops capabilities and
// credentials, and execs the task's command, which replaces it: the task is
// PID 1 of its PID namespace and the driver's own child, so its exit status
// is read with wait(2), and nothing lingers beside it. The mounts vanish
// with the namespace's last process, so a crashed agent leaves nothing to
// unmount, except what a task mounts in a bidirectional host volume: that
// propagates to the host, so the driver records the mounts below the
// volume at start and unmounts the others from the host on destroy (which
// also takes what the host mounted there meanwhile). A failure before the
// exec comes back over a close-on-exec pipe.
//
// A task outlives an agent restart. The handle records its host pid (the
// leader of its process group), its kernel start time, the boot ID and its
// cgroups; a new agent re-attaches to the same process, watches it through
// a pidfd (or /proc polling on the driver's clock), and can still tell an
// OOM kill from the cgroup, though not the exit code, which went to
// whoever reaped the orphan.
//
// What exec shares with raw_exec (the handle and its checks, re-attaching,
// the exit watch, stop, signals, inspection, stats) is the process core's,
// internal/proctask; this package owns the isolation: the init, the root,
// the namespaces, the capabilities and the cgroup limits.
//
// The driver is detected only where it can isolate: root, the namespaces,
// and the cpu, memory and pids cgroup controllers.
package exec
