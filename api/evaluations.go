package api

import (
	"cmp"
	"slices"
	"time"
)

// Evaluation statuses.
const (
	EvalStatusBlocked   = "blocked"
	EvalStatusPending   = "pending"
	EvalStatusComplete  = "complete"
	EvalStatusFailed    = "failed"
	EvalStatusCancelled = "canceled"
)

// Evaluation triggers: why an evaluation was created (its TriggeredBy).
const (
	EvalTriggerJobRegister          = "job-register"
	EvalTriggerJobDeregister        = "job-deregister"
	EvalTriggerPeriodicJob          = "periodic-job"
	EvalTriggerNodeDrain            = "node-drain"
	EvalTriggerNodeUpdate           = "node-update"
	EvalTriggerAllocStop            = "alloc-stop"
	EvalTriggerScheduled            = "scheduled"
	EvalTriggerRollingUpdate        = "rolling-update"
	EvalTriggerDeploymentWatcher    = "deployment-watcher"
	EvalTriggerFailedFollowUp       = "failed-follow-up"
	EvalTriggerMaxPlans             = "max-plan-attempts"
	EvalTriggerRetryFailedAlloc     = "alloc-failure"
	EvalTriggerQueuedAllocs         = "queued-allocs"
	EvalTriggerPreemption           = "preemption"
	EvalTriggerScaling              = "job-scaling"
	EvalTriggerMaxDisconnectTimeout = "max-disconnect-timeout"
	EvalTriggerReconnect            = "reconnect"
)

// Evaluation is one run (or pending run) of the scheduler for a job.
type Evaluation struct {
	ID                string
	Priority          int
	Type              string
	TriggeredBy       string
	Namespace         string
	JobID             string
	JobModifyIndex    uint64
	NodeID            string
	NodeModifyIndex   uint64
	Status            string
	StatusDescription string
	// Wait and WaitUntil delay the evaluation; follow-up evaluations (for a
	// reschedule delay or a disconnect window) use WaitUntil.
	Wait         time.Duration
	WaitUntil    time.Time
	NextEval     string
	PreviousEval string
	BlockedEval  string
	// FailedTGAllocs explains, per group, why placements failed.
	FailedTGAllocs       map[string]*AllocationMetric
	ClassEligibility     map[string]bool
	EscapedComputedClass bool
	// QueuedAllocations counts, per group, placements still waiting.
	QueuedAllocations map[string]int
	SnapshotIndex     uint64
	CreateIndex       uint64
	ModifyIndex       uint64
	// CreateTime and ModifyTime are Unix nanoseconds.
	CreateTime int64
	ModifyTime int64
}

// Evaluations is the handle on the evaluation endpoints.
type Evaluations struct {
	client *Client
}

// Evaluations returns the handle on the evaluation endpoints.
func (c *Client) Evaluations() *Evaluations { return &Evaluations{client: c} }

// List returns evaluations (GET /v1/evaluations), newest first.
func (e *Evaluations) List(q *QueryOptions) ([]*Evaluation, *QueryMeta, error) {
	var resp []*Evaluation
	qm, err := e.client.query("/v1/evaluations", &resp, q)
	if err != nil {
		return nil, nil, err
	}
	sortEvals(resp)
	return resp, qm, nil
}

// Info returns one evaluation (GET /v1/evaluation/:id).
func (e *Evaluations) Info(evalID string, q *QueryOptions) (*Evaluation, *QueryMeta, error) {
	var resp Evaluation
	qm, err := e.client.query("/v1/evaluation/"+pathID(evalID), &resp, q)
	if err != nil {
		return nil, nil, err
	}
	return &resp, qm, nil
}

// Allocations returns the allocations an evaluation placed or updated
// (GET /v1/evaluation/:id/allocations), newest first.
func (e *Evaluations) Allocations(evalID string, q *QueryOptions) ([]*AllocationListStub, *QueryMeta, error) {
	var resp []*AllocationListStub
	qm, err := e.client.query("/v1/evaluation/"+pathID(evalID)+"/allocations", &resp, q)
	if err != nil {
		return nil, nil, err
	}
	sortAllocStubs(resp)
	return resp, qm, nil
}

func sortEvals(s []*Evaluation) {
	slices.SortStableFunc(s, func(a, b *Evaluation) int { return cmp.Compare(b.CreateIndex, a.CreateIndex) })
}

// EvalDeleteResponse is the answer of DELETE /v1/evaluations: how many
// evaluations were deleted.
type EvalDeleteResponse struct {
	Count int
}
