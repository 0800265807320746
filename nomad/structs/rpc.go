package structs

import (
	"context"
	"time"
)

// QueryOptions are the common parameters of read RPCs. MinQueryIndex and
// MaxQueryTime make a blocking query: the server waits until its state
// passes MinQueryIndex or MaxQueryTime elapses.
type QueryOptions struct {
	Region        string
	Namespace     string
	MinQueryIndex uint64
	MaxQueryTime  time.Duration
	Prefix        string
	AllowStale    bool

	// AuthToken is the caller's secret. A client puts its node's SecretID
	// here for the node RPCs (Node.GetClientAllocs, Node.UpdateStatus,
	// Node.UpdateAlloc), which refuse a missing or wrong one.
	AuthToken string

	// ctx is the caller's context (see Context); never encoded.
	ctx context.Context
}

// Blocking query limits.
const (
	DefaultBlockingQueryTime = 5 * time.Minute
	MaxBlockingQueryTime     = 10 * time.Minute
)

// BlockingTime is how long the server may hold this request before it
// answers: zero for a plain read. Transports add it to their timeouts.
func (q QueryOptions) BlockingTime() time.Duration {
	if q.MinQueryIndex == 0 {
		return 0
	}
	wait := q.MaxQueryTime
	if wait <= 0 {
		wait = DefaultBlockingQueryTime
	}
	wait = min(wait, MaxBlockingQueryTime)
	return wait + wait/16 // the server staggers wake-ups by up to 1/16
}

// RequestNamespace returns the namespace, defaulting to "default".
func (q QueryOptions) RequestNamespace() string {
	if q.Namespace == "" {
		return DefaultNamespace
	}
	return q.Namespace
}

// RequestRegion returns the region the request is for; "" means the
// region of the server that receives it.
func (q QueryOptions) RequestRegion() string { return q.Region }

// QueryMeta is returned by read RPCs.
type QueryMeta struct {
	Index       uint64
	KnownLeader bool
	LastContact time.Duration
}

// WriteRequest carries the common parameters of write RPCs.
type WriteRequest struct {
	Region    string
	Namespace string

	// AuthToken is the caller's secret, as in QueryOptions. Endpoints
	// clear it before a request goes through raft: a credential has no
	// business in the replicated log.
	AuthToken string

	// ctx is the caller's context (see Context); never encoded.
	ctx context.Context
}

// RequestNamespace returns the namespace, defaulting to "default".
func (w WriteRequest) RequestNamespace() string {
	if w.Namespace == "" {
		return DefaultNamespace
	}
	return w.Namespace
}

// RequestRegion returns the region the request is for; "" means the
// region of the server that receives it.
func (w WriteRequest) RequestRegion() string { return w.Region }

// RegionRequest is a request that names the region it is for.
type RegionRequest interface {
	RequestRegion() string
}

// WriteMeta is returned by write RPCs.
type WriteMeta struct {
	Index uint64
}

// GenericRequest is a request with no arguments.
type GenericRequest struct {
	QueryOptions
}

// GenericResponse is a write response with no payload.
type GenericResponse struct {
	WriteMeta
}

// JobRegisterRequest registers or updates a job. The endpoint fills Eval and
// SubmitTime before the request goes through raft, so the FSM does not read
// the clock.
type JobRegisterRequest struct {
	Job            *Job
	EnforceIndex   bool
	JobModifyIndex uint64
	Eval           *Evaluation
	SubmitTime     int64
	// Scaling is the event a scale request records with the version it
	// registers, in the same raft entry.
	Scaling *ScalingEventRequest
	// EvalPriority, when set, is the priority of the evaluation created
	// instead of the job's own.
	EvalPriority int
	// PreserveCounts keeps the count of every group the registered job
	// already has (upstream's `job run -preserve-counts`); new groups take
	// the count they are given.
	PreserveCounts bool
	WriteRequest
}

// JobRegisterResponse reports the evaluation created for the job.
type JobRegisterResponse struct {
	EvalID          string
	EvalCreateIndex uint64
	JobModifyIndex  uint64
	Warnings        string
	QueryMeta
}

// JobDeregisterRequest stops (or, with Purge, removes) a job.
type JobDeregisterRequest struct {
	JobID string
	Purge bool
	// NoShutdownDelay marks every allocation of the job that is not
	// finished to skip its shutdown_delay when its client stops it (job
	// stop -no-shutdown-delay), in the same raft entry as the stop.
	NoShutdownDelay bool
	Eval            *Evaluation
	Now             int64
	// EvalPriority is as JobRegisterRequest's.
	EvalPriority int
	WriteRequest
}

// JobDeregisterResponse reports the evaluation created by the deregister.
type JobDeregisterResponse struct {
	EvalID          string
	EvalCreateIndex uint64
	JobModifyIndex  uint64
	QueryMeta
}

// JobValidateRequest validates a job without registering it.
type JobValidateRequest struct {
	Job *Job
	WriteRequest
}

// JobValidateResponse lists validation problems.
type JobValidateResponse struct {
	DriverConfigValidated bool
	ValidationErrors      []string
	Error                 string
	Warnings              string
}

// JobSpecificRequest names one job.
type JobSpecificRequest struct {
	JobID string
	All   bool
	QueryOptions
}

// JobListRequest lists jobs.
type JobListRequest struct {
	QueryOptions
}

// JobListResponse lists jobs.
type JobListResponse struct {
	Jobs []*JobListStub
	QueryMeta
}

// SingleJobResponse returns one job, or nil when it does not exist.
type SingleJobResponse struct {
	Job *Job
	QueryMeta
}

// JobSummaryResponse returns a job's summary.
type JobSummaryResponse struct {
	JobSummary *JobSummary
	QueryMeta
}

// JobAllocationsResponse lists a job's allocations.
type JobAllocationsResponse struct {
	Allocations []*AllocListStub
	QueryMeta
}

// JobEvaluationsResponse lists a job's evaluations.
type JobEvaluationsResponse struct {
	Evaluations []*Evaluation
	QueryMeta
}

// NodeRegisterRequest registers or re-registers a node.
type NodeRegisterRequest struct {
	Node      *Node
	UpdatedAt int64
	// Evals are the node-update evaluations the registration causes,
	// committed in the same raft entry so none is lost to a leader crash.
	Evals []*Evaluation
	WriteRequest
}

// NodeUpdateStatusRequest is a heartbeat or a status change.
type NodeUpdateStatusRequest struct {
	NodeID    string
	Status    string
	NodeEvent *NodeEvent
	UpdatedAt int64
	// Evals are the node-update evaluations the change causes, committed
	// in the same raft entry: a node is never left disconnected or down
	// without the evaluations that act on it.
	Evals []*Evaluation
	WriteRequest
}

// NodeBatchUpdateStatusRequest is the status changes of many nodes the
// leader gathered within a short window (heartbeats, missed heartbeats),
// committed as one raft entry with one node-update evaluation per job
// they concern: a site of a thousand nodes coming back at once costs a
// few entries and evaluations, not one per node and per job.
type NodeBatchUpdateStatusRequest struct {
	Updates []*NodeStatusUpdate
	// UpdatedAt is the leader's time of the batch, every node's
	// StatusUpdatedAt.
	UpdatedAt int64
	// Evals see every change of the batch: they are in the same entry.
	Evals []*Evaluation
	// SiteOutages, when set, are the site outages the batch's disconnects
	// complete (Declare, with their NodeEvents), decided by the leader from
	// the state the batch applies to: one decision, one entry, so no
	// scheduler and no leader after a change sees the disconnects without
	// the outage.
	SiteOutages *SiteOutageUpdateRequest `json:",omitempty"`
	WriteRequest
}

// NodeStatusUpdate is one node's change in a NodeBatchUpdateStatusRequest.
type NodeStatusUpdate struct {
	NodeID    string
	Status    string
	NodeEvent *NodeEvent
}

// NodeServerInfo tells clients about servers.
type NodeServerInfo struct {
	RPCAdvertiseAddr string
	Datacenter       string
}

// NodeUpdateResponse answers node writes, with the heartbeat TTL the client
// must keep to.
type NodeUpdateResponse struct {
	HeartbeatTTL time.Duration
	// ServerTime is the answering server's clock (UnixNano) when it took
	// the request; ours only, zero from upstream's. The client reports
	// its tasks' times on this clock (client.serverClock), so that a
	// client whose own clock is off, or jumps, does not move the
	// servers' decisions that count from them (a reschedule's delay).
	ServerTime      int64
	EvalIDs         []string
	EvalCreateIndex uint64
	NodeModifyIndex uint64
	LeaderRPCAddr   string
	NumNodes        int32
	Servers         []*NodeServerInfo
	Index           uint64
	QueryMeta
}

// NodeSpecificRequest names one node. For Node.GetClientAllocs the node's
// secret travels in QueryOptions.AuthToken.
type NodeSpecificRequest struct {
	NodeID string
	QueryOptions
}

// NodeListRequest lists nodes.
type NodeListRequest struct {
	QueryOptions
}

// NodeListResponse lists nodes.
type NodeListResponse struct {
	Nodes []*NodeListStub
	QueryMeta
}

// SingleNodeResponse returns one node.
type SingleNodeResponse struct {
	Node *Node
	QueryMeta
}

// NodeAllocsResponse lists a node's allocations.
type NodeAllocsResponse struct {
	Allocs []*Allocation
	QueryMeta
}

// NodeClientAllocsResponse maps a node's allocation IDs to their
// AllocModifyIndex, so the client pulls only what changed.
type NodeClientAllocsResponse struct {
	Allocs map[string]uint64
	QueryMeta
}

// AllocUpdateRequest carries client status updates (Node.UpdateAlloc), or
// plan results and evaluations on their way through raft. For
// Node.UpdateAlloc, NodeID names the reporting node (its secret in
// WriteRequest.AuthToken) and every allocation must be on it.
type AllocUpdateRequest struct {
	NodeID    string
	Alloc     []*Allocation
	Evals     []*Evaluation
	UpdatedAt int64
	WriteRequest
}

// ApplyPlanResultsRequest commits a plan result through raft.
type ApplyPlanResultsRequest struct {
	// Job is the plan's job, written once instead of on every allocation.
	Job *Job
	// AllocsStopped and AllocsUpdated are the committed stops and
	// updates/placements.
	AllocsStopped []*Allocation
	AllocsUpdated []*Allocation
	// EvalID is the evaluation the plan belongs to; its allocations'
	// EvalID is set to it.
	EvalID string
	// Evals are follow-up evaluations created by the scheduler along
	// with the plan, committed atomically with it.
	Evals     []*Evaluation
	UpdatedAt int64
	// Deployment and DeploymentUpdates are the plan's.
	Deployment        *Deployment
	DeploymentUpdates []*DeploymentStatusUpdate
	WriteRequest
}

// AllocListRequest lists allocations.
type AllocListRequest struct {
	QueryOptions
}

// AllocListResponse lists allocations.
type AllocListResponse struct {
	Allocations []*AllocListStub
	QueryMeta
}

// AllocSpecificRequest names one allocation.
type AllocSpecificRequest struct {
	AllocID string
	QueryOptions
}

// SingleAllocResponse returns one allocation.
type SingleAllocResponse struct {
	Alloc *Allocation
	QueryMeta
}

// AllocsGetRequest fetches allocations by ID (the client's pull).
type AllocsGetRequest struct {
	AllocIDs []string
	QueryOptions
}

// AllocsGetResponse returns the requested allocations.
type AllocsGetResponse struct {
	Allocs []*Allocation
	QueryMeta
}

// EvalListRequest lists evaluations.
type EvalListRequest struct {
	QueryOptions
}

// EvalListResponse lists evaluations.
type EvalListResponse struct {
	Evaluations []*Evaluation
	QueryMeta
}

// EvalSpecificRequest names one evaluation.
type EvalSpecificRequest struct {
	EvalID string
	QueryOptions
}

// SingleEvalResponse returns one evaluation.
type SingleEvalResponse struct {
	Eval *Evaluation
	QueryMeta
}

// EvalAllocationsResponse lists an evaluation's allocations.
type EvalAllocationsResponse struct {
	Allocations []*AllocListStub
	QueryMeta
}

// EvalDequeueRequest asks the broker for work.
type EvalDequeueRequest struct {
	Schedulers []string
	Timeout    time.Duration
	WriteRequest
}

// EvalDequeueResponse hands out an evaluation and its token. WaitIndex is
// the state index the scheduler must see before processing it.
type EvalDequeueResponse struct {
	Eval      *Evaluation
	Token     string
	WaitIndex uint64
	QueryMeta
}

// EvalAckRequest acks or nacks an evaluation.
type EvalAckRequest struct {
	EvalID string
	Token  string
	WriteRequest
}

// EvalUpdateRequest writes evaluations through raft (status updates,
// follow-ups, blocked evaluations).
type EvalUpdateRequest struct {
	Evals     []*Evaluation
	EvalToken string
	UpdatedAt int64
	WriteRequest
}

// EvalDeleteRequest removes evaluations and allocations (garbage
// collection), or, UserInitiated, evaluations an operator names (DELETE
// /v1/evaluations), which the FSM refuses with ErrEvalBrokerNotPaused
// unless the stored scheduler configuration pauses the eval broker.
type EvalDeleteRequest struct {
	Evals         []string
	Allocs        []string
	UserInitiated bool
	WriteRequest
}

// DeploymentDeleteRequest removes deployments the garbage collector found
// finished, old and no longer referenced (see nomad/core_sched.go).
type DeploymentDeleteRequest struct {
	Deployments []string
	WriteRequest
}

// PlanRequest submits a plan.
type PlanRequest struct {
	Plan *Plan
	WriteRequest
}

// PlanResponse returns what was committed.
type PlanResponse struct {
	Result *PlanResult
	WriteMeta
}

// JobBatchDeregisterRequest removes jobs (garbage collection). The FSM
// removes a job only while it is still dead with no evaluation or
// allocation left: one registered again since the collector looked stays.
type JobBatchDeregisterRequest struct {
	Jobs []NamespacedID
	WriteRequest
}

// NodeBatchDeregisterRequest removes nodes the garbage collector found down
// past node_gc_threshold. Nodes maps each node ID to the ModifyIndex the
// collector saw: a node changed since (it came back, even if only to go
// down again) stays, as does one still holding a live allocation.
type NodeBatchDeregisterRequest struct {
	Nodes map[string]uint64
	WriteRequest
}

// MaxUUIDsPerWriteRequest bounds the IDs the garbage collector puts in one
// raft entry (upstream's figure: about 256 KiB of UUIDs), so a large
// collection never becomes one huge log entry.
const MaxUUIDsPerWriteRequest = 7281

// AllocStopRequest asks for one allocation to be stopped and replaced
// (nomad alloc stop).
type AllocStopRequest struct {
	AllocID         string
	NoShutdownDelay bool
	WriteRequest
}

// AllocStopResponse reports the evaluation that acts on the stop.
type AllocStopResponse struct {
	EvalID string
	Index  uint64
}

// AllocUpdateDesiredTransitionRequest records desired transitions on
// allocations and the evaluations that act on them, in one raft entry.
type AllocUpdateDesiredTransitionRequest struct {
	Allocs map[string]*DesiredTransition
	Evals  []*Evaluation
	WriteRequest
}
