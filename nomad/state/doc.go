// Package state is the servers' replicated state: nodes, jobs and their
// versions and summaries, evaluations, allocations, deployments and the
// rest of what raft carries, held in go-memdb.
//
// # Who calls it, and which way
//
// The raft FSM is the only writer on a real server, and its writes must be
// deterministic: every server applies the same log and must end with the
// same state. So the store never reads the clock or a random source; times
// arrive in the requests (UpdatedAt, SubmitTime, event timestamps), stamped
// by the leader before raft. Everything else reads: RPC endpoints through
// blocking queries, the scheduler and the plan applier through snapshots.
// It imports only the model (nomad/structs); the server wires it, never the
// other way (internal/audit checks the direction).
//
// # Objects
//
// Objects returned by reads are shared and immutable: Copy before changing.
// Writes take ownership of the objects passed in: the store sets their
// bookkeeping fields (CreateIndex, ModifyIndex, AllocModifyIndex,
// JobModifyIndex, Version, Status) in place and stores them, which is how
// the FSM hands the eval broker evaluations that carry their indexes. Do not
// change an object after writing it.
//
// # Transactions, indexes and waiting
//
// Each write method opens one memdb write transaction, applies the change
// and everything derived from it (job summaries, job status, replacement
// links, blocked-eval cancellation), stamps every table it changed in the
// index table with the raft index, and commits. A reader therefore never
// sees an allocation and a summary that disagree. A table's index never
// moves backwards. One decision is one transaction: a node status batch
// with the site outages it declares and its evaluations, a client's
// allocation reports with the evaluations they call for, a registration
// with its evaluations.
//
// Reads take a memdb.WatchSet (nil when not blocking) and add the watch
// channels of what they read; a blocking query sleeps on them. Lookups by
// ID return nil, nil when the object does not exist. Prefix lookups accept
// AllNamespaces ("*") as the namespace.
//
// # The rules it keeps
//
// Nodes: a re-registering node keeps its server-owned fields (events,
// drain, eligibility), with the event "Node re-registered" when it was
// down; only the drain and eligibility writes change them, and the events clients
// report (Node.EmitEvents, newest ten kept) are added to them.
//
// Jobs: a write bumps Version and JobModifyIndex only when the spec
// changed (index, status, version and submit-time fields are ignored), so
// an identical re-submission gives the scheduler nothing to update; the
// newest structs.JobTrackedVersions specs are kept, and the newest stable
// one. Job status is upstream Nomad's: running while any allocation is
// live (not TerminalStatus — unknown allocations are live); otherwise
// pending while any evaluation is not terminal; a system job is otherwise
// running until stopped; otherwise dead when the job is stopped or has had
// allocations or evaluations; otherwise pending.
//
// Job summaries count allocations per group by client status: pending →
// Starting, running → Running, complete, failed, lost, unknown → their own
// counters. Server-terminal allocations count by client status until the
// client reports. An evaluation's QueuedAllocations sets Queued; each new
// placement takes one off. Counts never go negative. Deleting a terminal
// allocation (GC) leaves the terminal counts as history, as upstream does;
// deleting a live one uncounts it.
//
// Evaluations: one written complete with no FailedTGAllocs cancels its
// job's blocked evaluations in the same transaction; an operator may
// delete evaluations only while the scheduler configuration pauses the
// broker.
//
// Allocations: client status has two owners. The client owns pending,
// running, complete and failed, reported through UpdateAllocsFromClient
// (which sets ModifyIndex but not AllocModifyIndex: the client has nothing
// new to pull). The scheduler owns lost and unknown; its writes
// (UpsertAllocs, UpsertPlanResults) carry a possibly stale copy of the
// allocation, so they change the client status only to lost or unknown,
// never over a terminal one, and otherwise keep what the client last
// reported, along with its TaskStates. No write moves an allocation from a
// terminal status (complete, failed, lost) back to pending, running or
// unknown. An allocation the servers are done with (lost, or unknown and
// desired stop) takes only its client's final report, complete or failed.
// Unknown is not terminal: AllocsByNodeTerminal(ws, node, false) includes
// unknown allocations. A new allocation with a PreviousAllocation becomes
// that allocation's NextAllocation, so replacement chains can be walked
// forward.
//
// # Snapshots
//
// snapshotTables in snapshot.go is the one list that ties a snapshot kind
// to its table and Go type: Persist, NewSnapshotObject and RestoreObject
// all read it, so a new table is added there once and is written and
// restored alike. The FSM restores into a fresh store, swaps it in, and
// calls Abandon on the old one so that its blocking queries return.
package state
