package structs

import "time"

// JobVersionsRequest asks for the stored versions of a job.
type JobVersionsRequest struct {
	JobID string
	// Diffs asks for the difference between each version and the one
	// before it.
	Diffs bool
	QueryOptions
}

// JobVersionsResponse lists a job's versions, newest first. Diffs[i] is the
// change from Versions[i+1] to Versions[i] when diffs were asked for.
type JobVersionsResponse struct {
	Versions []*Job
	Diffs    []*JobDiff
	QueryMeta
}

// JobRevertRequest registers a stored version of a job again, as a new
// version.
type JobRevertRequest struct {
	JobID      string
	JobVersion uint64
	// EnforcePriorVersion, when set, refuses the revert unless the job's
	// current version is this one: a guard against reverting over someone
	// else's update.
	EnforcePriorVersion *uint64
	WriteRequest
}

// JobStabilityRequest marks a version of a job stable or not.
type JobStabilityRequest struct {
	JobID      string
	JobVersion uint64
	Stable     bool
	WriteRequest
}

// JobStabilityResponse answers Job.Stable.
type JobStabilityResponse struct {
	WriteMeta
}

// JobScaleRequest sets the count of one task group of a job, making a new
// version, or (with a nil Count) only reports a scaling event.
type JobScaleRequest struct {
	JobID          string
	Target         map[string]string
	Count          *int64
	Message        string
	Error          bool
	Meta           map[string]any
	PolicyOverride bool
	// JobModifyIndex, when not 0, refuses the scale unless the job is at
	// this modify index.
	JobModifyIndex uint64
	WriteRequest
}

// JobPlanRequest asks what registering a job would do, without doing it.
type JobPlanRequest struct {
	Job            *Job
	Diff           bool
	PolicyOverride bool
	WriteRequest
}

// JobPlanResponse is the scheduler's dry run of a job registration.
type JobPlanResponse struct {
	// Annotations count the scheduler's decisions per group.
	Annotations *PlanAnnotations
	// FailedTGAllocs explains the placements that would fail, per group.
	FailedTGAllocs map[string]*AllocMetric
	// JobModifyIndex is the job's current modify index (0 for a new job):
	// what `job run -check-index` passes to refuse a job changed since.
	JobModifyIndex uint64
	// CreatedEvals are the evaluations the dry run would have created
	// (blocked and follow-up evaluations).
	CreatedEvals []*Evaluation
	// Diff is the change from the stored job, when asked for.
	Diff               *JobDiff
	NextPeriodicLaunch time.Time
	Warnings           string
	// DisconnectPolicies lists, per group, the disconnect policies the
	// plan's placements and updates would run under, with where each came
	// from (the group or a node pool); see ResolveDisconnect. Ours alone.
	DisconnectPolicies map[string][]string `json:",omitempty"`
	WriteMeta
}
