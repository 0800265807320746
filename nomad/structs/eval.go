package structs

import (
	"maps"
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

// What triggered an evaluation.
const (
	EvalTriggerJobRegister          = "job-register"
	EvalTriggerJobDeregister        = "job-deregister"
	EvalTriggerPeriodicJob          = "periodic-job"
	EvalTriggerNodeDrain            = "node-drain"
	EvalTriggerNodeUpdate           = "node-update"
	EvalTriggerAllocStop            = "alloc-stop"
	EvalTriggerScheduled            = "scheduled"
	EvalTriggerRollingUpdate        = "rolling-update"
	EvalTriggerFailedFollowUp       = "failed-follow-up"
	EvalTriggerMaxPlans             = "max-plan-attempts"
	EvalTriggerRetryFailedAlloc     = "alloc-failure"
	EvalTriggerQueuedAllocs         = "queued-allocs"
	EvalTriggerPreemption           = "preemption"
	EvalTriggerScaling              = "job-scaling"
	EvalTriggerMaxDisconnectTimeout = "max-disconnect-timeout"
	EvalTriggerReconnect            = "reconnect"
	EvalTriggerDeploymentWatcher    = "deployment-watcher"
	// EvalTriggerSiteOutageCleared is ours: a site outage ended and the
	// replacements it held may now be placed.
	EvalTriggerSiteOutageCleared = "site-outage-cleared"
)

// Upstream's core job IDs; the leader's garbage collections go by these
// names in logs.
const (
	CoreJobEvalGC       = "eval-gc"
	CoreJobJobGC        = "job-gc"
	CoreJobNodeGC       = "node-gc"
	CoreJobDeploymentGC = "deployment-gc"
	CoreJobForceGC      = "force-gc"
)

// Evaluation asks the scheduler to reconcile one job with the cluster.
type Evaluation struct {
	ID                string
	Namespace         string
	Priority          int
	Type              string
	TriggeredBy       string
	JobID             string
	JobModifyIndex    uint64
	NodeID            string
	NodeModifyIndex   uint64
	DeploymentID      string
	Status            string
	StatusDescription string
	Wait              time.Duration
	// WaitUntil holds the evaluation in the broker until this instant.
	WaitUntil            time.Time
	NextEval             string
	PreviousEval         string
	BlockedEval          string
	RelatedEvals         []*EvaluationStub `json:",omitempty"`
	FailedTGAllocs       map[string]*AllocMetric
	ClassEligibility     map[string]bool
	EscapedComputedClass bool
	QuotaLimitReached    string
	AnnotatePlan         bool
	QueuedAllocations    map[string]int
	SnapshotIndex        uint64
	CreateIndex          uint64
	ModifyIndex          uint64
	CreateTime           int64
	ModifyTime           int64
}

// EvaluationStub is a short form used for related evaluations.
type EvaluationStub struct {
	ID          string
	Namespace   string
	Priority    int
	Type        string
	TriggeredBy string
	JobID       string
	Status      string
	CreateIndex uint64
	ModifyIndex uint64
}

// TerminalStatus reports whether the evaluation is finished.
func (e *Evaluation) TerminalStatus() bool {
	switch e.Status {
	case EvalStatusComplete, EvalStatusFailed, EvalStatusCancelled:
		return true
	}
	return false
}

// ShouldEnqueue reports whether the broker should hold the evaluation.
func (e *Evaluation) ShouldEnqueue() bool { return e.Status == EvalStatusPending }

// ShouldBlock reports whether the evaluation waits for capacity.
func (e *Evaluation) ShouldBlock() bool { return e.Status == EvalStatusBlocked }

// Copy returns a deep copy.
func (e *Evaluation) Copy() *Evaluation {
	if e == nil {
		return nil
	}
	n := *e
	if e.RelatedEvals != nil {
		n.RelatedEvals = make([]*EvaluationStub, len(e.RelatedEvals))
		for i, r := range e.RelatedEvals {
			c := *r
			n.RelatedEvals[i] = &c
		}
	}
	if e.FailedTGAllocs != nil {
		n.FailedTGAllocs = make(map[string]*AllocMetric, len(e.FailedTGAllocs))
		for k, m := range e.FailedTGAllocs {
			n.FailedTGAllocs[k] = m.Copy()
		}
	}
	n.ClassEligibility = maps.Clone(e.ClassEligibility)
	n.QueuedAllocations = maps.Clone(e.QueuedAllocations)
	return &n
}

// NextRollingEval returns a follow-up evaluation after wait.
func (e *Evaluation) NextRollingEval(wait time.Duration, now time.Time) *Evaluation {
	return &Evaluation{
		ID:             GenerateUUID(),
		Namespace:      e.Namespace,
		Priority:       e.Priority,
		Type:           e.Type,
		TriggeredBy:    EvalTriggerRollingUpdate,
		JobID:          e.JobID,
		JobModifyIndex: e.JobModifyIndex,
		Status:         EvalStatusPending,
		Wait:           wait,
		PreviousEval:   e.ID,
		CreateTime:     now.UnixNano(),
		ModifyTime:     now.UnixNano(),
	}
}

// CreateBlockedEval returns a blocked evaluation that waits for capacity.
func (e *Evaluation) CreateBlockedEval(classEligibility map[string]bool, escaped bool, now time.Time) *Evaluation {
	return &Evaluation{
		ID:                   GenerateUUID(),
		Namespace:            e.Namespace,
		Priority:             e.Priority,
		Type:                 e.Type,
		TriggeredBy:          EvalTriggerQueuedAllocs,
		JobID:                e.JobID,
		JobModifyIndex:       e.JobModifyIndex,
		Status:               EvalStatusBlocked,
		PreviousEval:         e.ID,
		ClassEligibility:     classEligibility,
		EscapedComputedClass: escaped,
		CreateTime:           now.UnixNano(),
		ModifyTime:           now.UnixNano(),
	}
}

// CreateFailedFollowUpEval returns an evaluation that retries a failed one.
func (e *Evaluation) CreateFailedFollowUpEval(wait time.Duration, now time.Time) *Evaluation {
	return &Evaluation{
		ID:             GenerateUUID(),
		Namespace:      e.Namespace,
		Priority:       e.Priority,
		Type:           e.Type,
		TriggeredBy:    EvalTriggerFailedFollowUp,
		JobID:          e.JobID,
		JobModifyIndex: e.JobModifyIndex,
		Status:         EvalStatusPending,
		Wait:           wait,
		PreviousEval:   e.ID,
		CreateTime:     now.UnixNano(),
		ModifyTime:     now.UnixNano(),
	}
}

// NewEval returns a pending evaluation of the job, created at now.
func (j *Job) NewEval(trigger string, now time.Time) *Evaluation {
	return &Evaluation{
		ID:             GenerateUUID(),
		Namespace:      j.Namespace,
		Priority:       j.Priority,
		Type:           j.Type,
		TriggeredBy:    trigger,
		JobID:          j.ID,
		JobModifyIndex: j.JobModifyIndex,
		Status:         EvalStatusPending,
		CreateTime:     now.UnixNano(),
		ModifyTime:     now.UnixNano(),
	}
}
