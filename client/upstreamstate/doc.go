// Package upstreamstate reads what an upstream Nomad client (v1.6.5) left
// in its data_dir, so that our client can take over the node: the node's
// ID and secret, and for each allocation the tasks it ran, their state and
// the processes that still run them. It only reads: the files are opened
// read-only and nothing under the data_dir is changed.
//
// What it reads (learnt by running the upstream binary and decoding the
// files it wrote; docs: upgrading.md, "Replacing an upstream
// client"):
//
//	<data_dir>/client/client-id    the node ID, a bare UUID (no newline)
//	<data_dir>/client/secret-id    the node's secret ID, the same form
//	<data_dir>/client/state.db     a bbolt file:
//	  meta/version                           raw bytes "3" (not msgpack)
//	  allocations/<allocID>/alloc            msgpack {Alloc: Allocation with its Job}
//	  allocations/<allocID>/acknowledged_state  msgpack {State: {ClientStatus, ...}}
//	  allocations/<allocID>/task-<task>/task_state   msgpack TaskState
//	  allocations/<allocID>/task-<task>/local_state  msgpack {TaskHandle, Hooks, ...}
//	  TaskHandle.DriverState                 msgpack, in a str-format byte string:
//	    raw_exec, exec: {Pid, ReattachConfig{Addr, Network, Pid, Protocol}, StartedAt, TaskConfig}
//
// procs.go knows the processes an upstream client leaves beside a task
// (its executor and logmon) and finds them, and the task's own process,
// in /proc, checking each before naming it; it signals none of them.
//
// Everything else in the file (deploy_status, the hooks' data, the
// drivermanager, node and nodemeta buckets, the allocation's job beyond
// its task names and drivers) is left alone.
//
// Why a package of its own rather than a part of nomad/upstreamrpc, which
// otherwise owns upstream's formats: that package is the servers' edge
// (upstream's RPC wire and raft snapshot, translated into nomad/structs),
// while this is the client's on-disk state, read by the client before it
// has a server; it needs bbolt and none of the RPC machinery, and the
// client should not depend on a package of the server's. It is still the
// one place that knows this format: it returns plain values of its own,
// imports nothing of ours, and the rest of the client stays unaware of
// upstream.
//
// Robustness: Read never panics on a damaged file (bbolt's panics on a
// corrupt page and memory faults on a short mapping are turned into
// errors), refuses a state.db larger than Options.MaxFileSize and any
// value larger than Options.MaxValueSize before decoding it, and names the
// file and the bucket path of the key in every error about the contents
// (*FormatError). A state.db still locked by a running upstream agent is
// reported as such after Options.LockTimeout.
package upstreamstate
