package structs

import (
	"errors"
	"fmt"
)

// Scheduler algorithms of SchedulerConfiguration.SchedulerAlgorithm.
const (
	SchedulerAlgorithmBinpack = "binpack"
	SchedulerAlgorithmSpread  = "spread"
)

// ErrJobRegistrationDisabled is returned to a registration, dispatch or
// scale made without a management token while the scheduler configuration
// rejects job registrations: upstream's text, a permission refusal (403).
var ErrJobRegistrationDisabled error = &refusal{
	msg:  "Job registration, dispatch, and scale are disabled by the scheduler configuration",
	kind: ErrPermissionDenied,
}

// ErrEvalBrokerNotPaused is returned to a user's eval delete while the
// eval broker runs: deleting evaluations a worker may hold is unsafe.
var ErrEvalBrokerNotPaused = errors.New("eval broker is enabled; eval broker must be paused to delete evals")

// PreemptionConfig says which schedulers may preempt allocations: evict
// allocations of jobs at least PreemptionPriorityDelta lower in priority
// when a placement does not otherwise fit a feasible node.
type PreemptionConfig struct {
	SystemSchedulerEnabled   bool
	SysBatchSchedulerEnabled bool
	BatchSchedulerEnabled    bool
	ServiceSchedulerEnabled  bool
}

// PreemptionPriorityDelta is how much lower than the placing job's a job's
// priority must be for its allocations to be preempted (upstream's 10).
const PreemptionPriorityDelta = 10

// PreemptionEnabled reports whether the scheduler of jobType may preempt.
func (c *SchedulerConfiguration) PreemptionEnabled(jobType string) bool {
	p := c.PreemptionConfig
	switch jobType {
	case JobTypeSystem:
		return p.SystemSchedulerEnabled
	case JobTypeSysBatch:
		return p.SysBatchSchedulerEnabled
	case JobTypeBatch:
		return p.BatchSchedulerEnabled
	case JobTypeService:
		return p.ServiceSchedulerEnabled
	}
	return false
}

// SchedulerConfiguration is the cluster's scheduler configuration, kept in
// raft (GET/PUT /v1/operator/scheduler/configuration). Its fields are
// upstream's.
type SchedulerConfiguration struct {
	SchedulerAlgorithm            string
	PreemptionConfig              PreemptionConfig
	MemoryOversubscriptionEnabled bool
	// RejectJobRegistration refuses job registrations, dispatches and
	// scales made without a management token.
	RejectJobRegistration bool
	// PauseEvalBroker stops the leader's eval broker from handing out
	// evaluations; deleting evaluations requires it.
	PauseEvalBroker bool
	// NodeLimitForFeasibilityChecks is a newer upstream's limit on the
	// nodes ranked for spread and affinity; the official client always
	// sends it. Only 0 (upstream's default of 100) is accepted.
	NodeLimitForFeasibilityChecks uint
	CreateIndex                   uint64
	ModifyIndex                   uint64
}

// DefaultSchedulerConfiguration is upstream's default: binpack, no memory
// oversubscription, preemption by the system scheduler only, the broker
// running and registrations accepted.
func DefaultSchedulerConfiguration() *SchedulerConfiguration {
	return &SchedulerConfiguration{
		SchedulerAlgorithm: SchedulerAlgorithmBinpack,
		PreemptionConfig:   PreemptionConfig{SystemSchedulerEnabled: true},
	}
}

// Copy returns a copy of c (nil for nil).
func (c *SchedulerConfiguration) Copy() *SchedulerConfiguration {
	if c == nil {
		return nil
	}
	out := *c
	return &out
}

// Validate refuses, by field name, what this version cannot honour: every
// field accepted is a field in force. The scheduler ranks by bin packing
// or its reverse (spread); any combination of the preemption switches and
// memory oversubscription is honoured. An empty algorithm means binpack.
func (c *SchedulerConfiguration) Validate() error {
	var problems []string
	switch c.SchedulerAlgorithm {
	case "", SchedulerAlgorithmBinpack, SchedulerAlgorithmSpread:
	default:
		problems = append(problems, fmt.Sprintf("SchedulerAlgorithm: invalid scheduler algorithm %q (binpack or spread)", c.SchedulerAlgorithm))
	}
	if c.NodeLimitForFeasibilityChecks != 0 {
		problems = append(problems, "NodeLimitForFeasibilityChecks: not supported by this version (only 0, the default)")
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidRequest, &ValidationError{Problems: problems})
	}
	return nil
}

// SchedulerSetConfigRequest writes the scheduler configuration; with CAS
// only if the stored one's ModifyIndex is Config.ModifyIndex (0: none
// stored yet).
type SchedulerSetConfigRequest struct {
	Config SchedulerConfiguration
	CAS    bool
	WriteRequest
}

// SchedulerConfigurationResponse is Operator.SchedulerGetConfiguration's
// reply, the body of GET /v1/operator/scheduler/configuration.
type SchedulerConfigurationResponse struct {
	SchedulerConfig *SchedulerConfiguration
	QueryMeta
}

// SchedulerSetConfigurationResponse says whether a write took effect (a CAS
// write whose index is stale does not) and at which raft index.
type SchedulerSetConfigurationResponse struct {
	Updated bool
	WriteMeta
}

// EvalDeleteUserRequest is Eval.Delete's: the evaluations an operator
// deletes (DELETE /v1/evaluations), by ID.
type EvalDeleteUserRequest struct {
	EvalIDs []string
	WriteRequest
}

// EvalDeleteUserResponse counts the evaluations deleted, as upstream's
// EvalDeleteResponse.
type EvalDeleteUserResponse struct {
	Count int
	WriteMeta
}
