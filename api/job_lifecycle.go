package api

import (
	"errors"
	"net/http"
	"strconv"
	"time"
)

// JobVersionsResponse is the body of GET /v1/job/:id/versions.
type JobVersionsResponse struct {
	Versions []*Job
	Diffs    []*JobDiff
}

// JobRevertRequest is the body of PUT /v1/job/:id/revert.
type JobRevertRequest struct {
	JobID      string
	JobVersion uint64
	// EnforcePriorVersion, when set, refuses the revert unless the job is
	// at this version.
	EnforcePriorVersion *uint64
	WriteRequest
}

// JobStabilityRequest is the body of PUT /v1/job/:id/stable.
type JobStabilityRequest struct {
	JobID      string
	JobVersion uint64
	Stable     bool
	WriteRequest
}

// JobStabilityResponse answers a stability change.
type JobStabilityResponse struct {
	Index uint64
}

// ScalingRequest is the body of PUT /v1/job/:id/scale. Target["Group"]
// names the group; a nil Count only reports an event.
type ScalingRequest struct {
	Count          *int64
	Target         map[string]string
	Message        string
	Error          bool
	Meta           map[string]any
	PolicyOverride bool
	JobModifyIndex uint64
	WriteRequest
}

// JobPlanRequest is the body of PUT /v1/job/:id/plan.
type JobPlanRequest struct {
	Job            *Job
	Diff           bool
	PolicyOverride bool
	WriteRequest
}

// JobPlanResponse is the scheduler's dry run of a registration.
type JobPlanResponse struct {
	JobModifyIndex     uint64
	CreatedEvals       []*Evaluation
	Diff               *JobDiff
	Annotations        *PlanAnnotations
	FailedTGAllocs     map[string]*AllocationMetric
	NextPeriodicLaunch time.Time
	Warnings           string
	// DisconnectPolicies lists per group the disconnect policies the
	// plan's allocations would run under and where each came from. Ours.
	DisconnectPolicies map[string][]string `json:",omitempty"`
}

// PlanAnnotations count the scheduler's decisions per group.
type PlanAnnotations struct {
	DesiredTGUpdates map[string]*DesiredUpdates
	// PreemptedAllocs are the allocations the plan would evict.
	PreemptedAllocs []*AllocationListStub
}

// DesiredUpdates counts what a plan does to one group. Reconnect,
// Disconnect, RescheduleNow and RescheduleLater are upstream's too.
type DesiredUpdates struct {
	Ignore            uint64
	Place             uint64
	Migrate           uint64
	Stop              uint64
	InPlaceUpdate     uint64
	DestructiveUpdate uint64
	Canary            uint64
	Preemptions       uint64
	Reconnect         uint64
	Disconnect        uint64
	RescheduleNow     uint64
	RescheduleLater   uint64
}

// JobDiff is the change from one job version to another.
type JobDiff struct {
	Type       string
	ID         string
	Fields     []*FieldDiff
	Objects    []*ObjectDiff
	TaskGroups []*TaskGroupDiff
}

// TaskGroupDiff is the change to one group; Updates counts the plan's
// decisions for it ("create", "destroy", "in-place update", ...).
type TaskGroupDiff struct {
	Type    string
	Name    string
	Fields  []*FieldDiff
	Objects []*ObjectDiff
	Tasks   []*TaskDiff
	Updates map[string]uint64
}

// TaskDiff is the change to one task.
type TaskDiff struct {
	Type        string
	Name        string
	Fields      []*FieldDiff
	Objects     []*ObjectDiff
	Annotations []string
}

// FieldDiff is the change to one field.
type FieldDiff struct {
	Type        string
	Name        string
	Old, New    string
	Annotations []string
}

// ObjectDiff is the change to a nested object.
type ObjectDiff struct {
	Type    string
	Name    string
	Fields  []*FieldDiff
	Objects []*ObjectDiff
}

// Versions returns the job's stored versions, newest first (GET
// /v1/job/:id/versions); with diffs, the change each made to the one
// before it.
func (j *Jobs) Versions(jobID string, diffs bool, q *QueryOptions) ([]*Job, []*JobDiff, *QueryMeta, error) {
	var resp JobVersionsResponse
	path := jobPath(jobID, "/versions") + "?diffs=" + strconv.FormatBool(diffs)
	qm, err := j.client.query(path, &resp, q)
	if err != nil {
		return nil, nil, nil, err
	}
	return resp.Versions, resp.Diffs, qm, nil
}

// Revert registers a stored version of the job again (PUT
// /v1/job/:id/revert). enforcePriorVersion, when set, refuses the revert
// unless the job is at that version.
func (j *Jobs) Revert(jobID string, version uint64, enforcePriorVersion *uint64, w *WriteOptions) (*JobRegisterResponse, *WriteMeta, error) {
	req := &JobRevertRequest{JobID: jobID, JobVersion: version, EnforcePriorVersion: enforcePriorVersion}
	var resp JobRegisterResponse
	wm, err := j.client.write(http.MethodPut, jobPath(jobID, "/revert"), req, &resp, w)
	if err != nil {
		return nil, nil, err
	}
	return &resp, wm, nil
}

// Stable marks a version of the job stable or not (PUT
// /v1/job/:id/stable).
func (j *Jobs) Stable(jobID string, version uint64, stable bool, w *WriteOptions) (*JobStabilityResponse, *WriteMeta, error) {
	req := &JobStabilityRequest{JobID: jobID, JobVersion: version, Stable: stable}
	var resp JobStabilityResponse
	wm, err := j.client.write(http.MethodPut, jobPath(jobID, "/stable"), req, &resp, w)
	if err != nil {
		return nil, nil, err
	}
	return &resp, wm, nil
}

// Plan asks what registering job would do, without doing it (PUT
// /v1/job/:id/plan); diff also returns the change from the stored job.
func (j *Jobs) Plan(job *Job, diff bool, w *WriteOptions) (*JobPlanResponse, *WriteMeta, error) {
	if job == nil || job.ID == nil {
		return nil, nil, errors.New("job is missing ID")
	}
	req := &JobPlanRequest{Job: job, Diff: diff}
	if w != nil {
		req.WriteRequest = WriteRequest{Region: w.Region, Namespace: w.Namespace}
	}
	var resp JobPlanResponse
	wm, err := j.client.write(http.MethodPut, jobPath(*job.ID, "/plan"), req, &resp, w)
	if err != nil {
		return nil, nil, err
	}
	return &resp, wm, nil
}

// Scale sets the count of one group of the job (PUT /v1/job/:id/scale),
// which registers a new version.
func (j *Jobs) Scale(jobID, group string, count *int, message string, isError bool, meta map[string]any, w *WriteOptions) (*JobRegisterResponse, *WriteMeta, error) {
	req := &ScalingRequest{Target: map[string]string{"Job": jobID, "Group": group}, Message: message, Error: isError, Meta: meta}
	if count != nil {
		c := int64(*count)
		req.Count = &c
	}
	var resp JobRegisterResponse
	wm, err := j.client.write(http.MethodPut, jobPath(jobID, "/scale"), req, &resp, w)
	if err != nil {
		return nil, nil, err
	}
	return &resp, wm, nil
}
