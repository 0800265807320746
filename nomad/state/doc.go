// Package state is the servers' replicated state: nodes, jobs and their
// summaries, evaluations and allocations, held in go-memdb.
//
// # Who calls it
//
// The raft FSM is the only writer on a real server, and its writes must be
// deterministic: every server applies the same log and must end with the
// same state. So the store never reads the clock or a random source; times
// arrive in the requests (UpdatedAt, SubmitTime, event timestamps), stamped
// by the leader before raft. Everything else reads: RPC endpoints through
// blocking queries, the scheduler and the plan applier through snapshots.
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
// # Transactions and indexes
//
// Each write method opens one memdb write transaction, applies the change
// and everything derived from it (job summaries, job status, replacement
// links, blocked-eval cancellation), stamps every table it changed in the
// index table with the raft index, and commits. A reader therefore never
// sees an allocation and a summary that disagree. A table's index never
// moves backwards.
//
// # API
//
// Store, snapshots and waiting:
//
//	type StateStoreConfig struct{ Logger hclog.Logger; OnCommit func(index uint64, changes memdb.Changes) }
//	func NewStateStore(cfg *StateStoreConfig) (*StateStore, error)
//	func (s *StateStore) Snapshot() (*StateSnapshot, error)  // StateSnapshot embeds StateStore
//	func (s *StateStore) SnapshotMinIndex(ctx context.Context, index uint64) (*StateSnapshot, error)
//	func (s *StateStore) LatestIndex() (uint64, error)
//	func (s *StateStore) Index(table string) (uint64, error)  // Table* constants
//	func (s *StateStore) AbandonCh() <-chan struct{}
//	func (s *StateStore) Abandon()
//	type QueryFn func(ws memdb.WatchSet, s *StateStore) (resp any, index uint64, err error)
//	func (s *StateStore) BlockingQuery(ctx context.Context, minIndex uint64, fn QueryFn) (any, uint64, error)
//
// Reads take a memdb.WatchSet (nil when not blocking) and add the watch
// channels of what they read; a blocking query sleeps on them. Lookups by
// ID return nil, nil when the object does not exist. Prefix lookups accept
// AllNamespaces ("*") as the namespace.
//
// Nodes:
//
//	func (s *StateStore) UpsertNode(index uint64, node *structs.Node) error
//	func (s *StateStore) UpsertNodeWithEvals(index uint64, node *structs.Node, evals []*structs.Evaluation) error
//	func (s *StateStore) DeleteNode(index uint64, nodeIDs []string) error
//	func (s *StateStore) UpdateNodeStatus(index uint64, nodeID, status string, updatedAt int64, event *structs.NodeEvent) error
//	func (s *StateStore) UpdateNodeStatusBatch(index uint64, req *structs.NodeBatchUpdateStatusRequest) error
//	func (s *StateStore) UpdateNodeEligibility(index uint64, nodeID, eligibility string, event *structs.NodeEvent) error
//	func (s *StateStore) AddNodeEvents(index uint64, events map[string][]*structs.NodeEvent) error  // what clients report (Node.EmitEvents)
//	func (s *StateStore) UpdateNodeDrain(index uint64, nodeID string, u NodeDrainUpdate) error
//	func (s *StateStore) NodeByID(ws memdb.WatchSet, id string) (*structs.Node, error)
//	func (s *StateStore) NodesByIDPrefix(ws memdb.WatchSet, prefix string) (memdb.ResultIterator, error)
//	func (s *StateStore) Nodes(ws memdb.WatchSet) (memdb.ResultIterator, error)
//
// UpdateNodeStatusBatch writes a batch's status changes, the site outages
// it declares and its node-update evaluations in one transaction.
//
// UpsertNode keeps the server-owned fields of a re-registering node (events,
// drain, eligibility), adding the event "Node re-registered" when the node was
// down; UpdateNodeDrain and UpdateNodeEligibility change them.
//
// Jobs and summaries:
//
//	func (s *StateStore) UpsertJob(index uint64, submitTime int64, job *structs.Job) error
//	func (s *StateStore) DeleteJob(index uint64, namespace, jobID string) error
//	func (s *StateStore) JobByID(ws memdb.WatchSet, namespace, id string) (*structs.Job, error)
//	func (s *StateStore) JobsByIDPrefix(ws memdb.WatchSet, namespace, prefix string) (memdb.ResultIterator, error)
//	func (s *StateStore) Jobs(ws memdb.WatchSet) (memdb.ResultIterator, error)
//	func (s *StateStore) JobSummaryByID(ws memdb.WatchSet, namespace, jobID string) (*structs.JobSummary, error)
//	func (s *StateStore) JobSummaries(ws memdb.WatchSet) (memdb.ResultIterator, error)
//
// Job versions (every spec UpsertJob writes, the newest
// structs.JobTrackedVersions kept, and the newest stable one):
//
//	func (s *StateStore) JobVersionsByID(ws memdb.WatchSet, namespace, jobID string) ([]*structs.Job, error)  // newest first
//	func (s *StateStore) JobByIDAndVersion(ws memdb.WatchSet, namespace, jobID string, version uint64) (*structs.Job, error)
//	func (s *StateStore) UpdateJobStability(index uint64, namespace, jobID string, version uint64, stable bool) error
//
// UpsertJob bumps Version and JobModifyIndex only when the spec changed
// (index, status, version and submit-time fields are ignored), so an
// identical re-submission gives the scheduler nothing to update.
//
// Job status is upstream Nomad's: running while any allocation is live
// (not TerminalStatus — unknown allocations are live); otherwise pending
// while any evaluation is not terminal; a system job is otherwise running
// until stopped; otherwise dead when the job is stopped or has had
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
// Evaluations:
//
//	func (s *StateStore) UpsertEvals(index uint64, evals []*structs.Evaluation) error
//	func (s *StateStore) DeleteEval(index uint64, evalIDs, allocIDs []string) error
//	func (s *StateStore) DeleteEvalsByUser(index uint64, evalIDs []string) error  // only while the scheduler configuration pauses the broker
//	func (s *StateStore) EvalByID(ws memdb.WatchSet, id string) (*structs.Evaluation, error)
//	func (s *StateStore) EvalsByIDPrefix(ws memdb.WatchSet, namespace, prefix string) (memdb.ResultIterator, error)
//	func (s *StateStore) Evals(ws memdb.WatchSet) (memdb.ResultIterator, error)
//	func (s *StateStore) EvalsByJob(ws memdb.WatchSet, namespace, jobID string) ([]*structs.Evaluation, error)
//
// An evaluation written complete with no FailedTGAllocs cancels its job's
// blocked evaluations in the same transaction.
//
// The scheduler configuration, one row, the default until written:
//
//	func (s *StateStore) SchedulerConfig(ws memdb.WatchSet) (uint64, *structs.SchedulerConfiguration, error)
//	func (s *StateStore) SchedulerSetConfig(index uint64, cfg *structs.SchedulerConfiguration, cas bool) (bool, error)
//
// Allocations:
//
//	func (s *StateStore) UpsertAllocs(index uint64, allocs []*structs.Allocation) error
//	func (s *StateStore) UpdateAllocsFromClient(index uint64, allocs []*structs.Allocation) error
//	func (s *StateStore) UpdateAllocsFromClientWithEvals(index uint64, req *structs.AllocUpdateRequest) error  // and the evaluations, one transaction
//	func (s *StateStore) UpsertPlanResults(index uint64, req *structs.ApplyPlanResultsRequest) error
//	func (s *StateStore) AllocByID(ws memdb.WatchSet, id string) (*structs.Allocation, error)
//	func (s *StateStore) AllocsByIDPrefix(ws memdb.WatchSet, namespace, prefix string) (memdb.ResultIterator, error)
//	func (s *StateStore) AllocsByNode(ws memdb.WatchSet, nodeID string) ([]*structs.Allocation, error)
//	func (s *StateStore) AllocsByNodeTerminal(ws memdb.WatchSet, nodeID string, terminal bool) ([]*structs.Allocation, error)
//	func (s *StateStore) AllocsByJob(ws memdb.WatchSet, namespace, jobID string, anyCreateIndex bool) ([]*structs.Allocation, error)
//	func (s *StateStore) AllocsByEval(ws memdb.WatchSet, evalID string) ([]*structs.Allocation, error)
//	func (s *StateStore) AllocsByFollowupEval(ws memdb.WatchSet, evalID string) ([]*structs.Allocation, error)
//	func (s *StateStore) Allocs(ws memdb.WatchSet) (memdb.ResultIterator, error)
//
// Client status has two owners. The client owns pending, running, complete
// and failed, reported through UpdateAllocsFromClient (which sets
// ModifyIndex but not AllocModifyIndex: the client has nothing new to pull).
// The scheduler owns lost and unknown; its writes (UpsertAllocs,
// UpsertPlanResults) carry a possibly stale copy of the allocation, so they
// change the client status only to lost or unknown, never over a terminal
// one, and otherwise keep what the client last reported, along with its
// TaskStates. No write moves an allocation from a terminal status
// (complete, failed, lost) back to pending, running or unknown. An
// allocation the servers are done with (lost, or unknown and desired stop)
// takes only its client's final report, complete or failed. Unknown is not terminal:
// AllocsByNodeTerminal(ws, node, false) includes unknown allocations.
//
// A new allocation with a PreviousAllocation becomes that allocation's
// NextAllocation, so replacement chains can be walked forward.
//
// Snapshot and restore (the raft FSM):
//
//	type SnapshotKind uint8  // SnapshotIndex, SnapshotNode, SnapshotJob, SnapshotJobSummary, SnapshotEval, SnapshotAlloc
//	type IndexEntry struct{ Key string; Value uint64 }
//	func (s *StateSnapshot) Persist(enc func(kind SnapshotKind, obj any) error) error
//	func (s *StateStore) Restore() (*StateRestore, error)
//	func (r *StateRestore) NodeRestore(*structs.Node) error  // and JobRestore, JobSummaryRestore, EvalRestore, AllocRestore, IndexRestore(*IndexEntry)
//	func NewSnapshotObject(kind SnapshotKind) (any, error)
//	func (r *StateRestore) RestoreObject(kind SnapshotKind, obj any) error
//	func (r *StateRestore) Commit() error
//	func (r *StateRestore) Abort()
//
// snapshotTables in snapshot.go is the one list that ties a kind to its
// table and Go type: Persist, NewSnapshotObject and RestoreObject all read
// it, so a new table is added there once and is written and restored alike.
//
// The FSM restores into a fresh store, swaps it in, and calls Abandon on
// the old one so that its blocking queries return.
package state
