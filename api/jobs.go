package api

import (
	"cmp"
	"net/http"
	"slices"
	"strconv"
)

// Job types.
const (
	JobTypeService  = "service"
	JobTypeBatch    = "batch"
	JobTypeSystem   = "system"
	JobTypeSysbatch = "sysbatch"
)

// Job statuses, as the server reports them.
const (
	JobStatusPending = "pending"
	JobStatusRunning = "running"
	JobStatusDead    = "dead"
)

// Job defaults applied by Canonicalize.
const (
	JobDefaultPriority = 50
	DefaultNamespace   = "default"
	GlobalRegion       = "global"
)

// Job is the wire form of a job: what `job run` submits and `job inspect`
// shows. The first group of fields comes from the job file; the second is
// set by the server and ignored on registration.
type Job struct {
	Region      *string
	Namespace   *string
	ID          *string
	Name        *string
	Type        *string
	Priority    *int
	AllAtOnce   *bool
	Datacenters []string
	NodePool    *string
	Constraints []*Constraint
	Affinities  []*Affinity
	Spreads     []*Spread
	TaskGroups  []*TaskGroup
	Meta        map[string]string
	Update      *UpdateStrategy
	// Reschedule and Migrate are defaults for the job's groups, merged
	// field by field under each group's own by Canonicalize, as
	// upstream's client does; the server's model has no job-level field.
	Reschedule *ReschedulePolicy `json:",omitempty"`
	Migrate    *MigrateStrategy  `json:",omitempty"`

	Periodic         *PeriodicConfig
	ParameterizedJob *ParameterizedJobConfig

	Stop              *bool
	ParentID          *string
	Dispatched        bool
	Payload           []byte
	Status            *string
	StatusDescription *string
	Stable            *bool
	Version           *uint64
	SubmitTime        *int64
	CreateIndex       *uint64
	ModifyIndex       *uint64
	JobModifyIndex    *uint64
}

// NewServiceJob returns a service job with an ID, name, region and priority.
func NewServiceJob(id, name, region string, priority int) *Job {
	return newJob(id, name, region, JobTypeService, priority)
}

// NewBatchJob returns a batch job with an ID, name, region and priority.
func NewBatchJob(id, name, region string, priority int) *Job {
	return newJob(id, name, region, JobTypeBatch, priority)
}

func newJob(id, name, region, typ string, priority int) *Job {
	return &Job{
		ID:       new(id),
		Name:     new(name),
		Region:   new(region),
		Type:     new(typ),
		Priority: new(priority),
	}
}

// AddTaskGroup adds a group to the job.
func (j *Job) AddTaskGroup(g *TaskGroup) *Job {
	j.TaskGroups = append(j.TaskGroups, g)
	return j
}

// Constrain adds a job-level constraint.
func (j *Job) Constrain(c *Constraint) *Job {
	j.Constraints = append(j.Constraints, c)
	return j
}

// LookupTaskGroup returns the group called name, or nil.
func (j *Job) LookupTaskGroup(name string) *TaskGroup {
	for _, g := range j.TaskGroups {
		if g.Name != nil && *g.Name == name {
			return g
		}
	}
	return nil
}

// Canonicalize fills in every default the job file may leave out, the same
// ones upstream's client fills, so that a job round-tripped through
// `/v1/jobs/parse?canonicalize=true` or `job inspect` reads the same here
// as there. It is idempotent.
func (j *Job) Canonicalize() {
	if j.ID == nil {
		j.ID = new("")
	}
	if j.Name == nil {
		j.Name = new(*j.ID)
	}
	if j.ParentID == nil {
		j.ParentID = new("")
	}
	if j.Namespace == nil {
		j.Namespace = new(DefaultNamespace)
	}
	if j.Region == nil {
		j.Region = new(GlobalRegion)
	}
	if j.Type == nil {
		j.Type = new(JobTypeService)
	}
	if j.Priority == nil {
		j.Priority = new(JobDefaultPriority)
	}
	if j.AllAtOnce == nil {
		j.AllAtOnce = new(false)
	}
	// An empty node pool means "the server's default pool"; resolving it is
	// the server's job because the default is server configuration.
	if j.NodePool == nil {
		j.NodePool = new("")
	}
	if j.Stop == nil {
		j.Stop = new(false)
	}
	if j.Status == nil {
		j.Status = new("")
	}
	if j.StatusDescription == nil {
		j.StatusDescription = new("")
	}
	if j.Stable == nil {
		j.Stable = new(false)
	}
	if j.Version == nil {
		j.Version = new(uint64(0))
	}
	if j.CreateIndex == nil {
		j.CreateIndex = new(uint64(0))
	}
	if j.ModifyIndex == nil {
		j.ModifyIndex = new(uint64(0))
	}
	if j.JobModifyIndex == nil {
		j.JobModifyIndex = new(uint64(0))
	}
	if j.Periodic != nil {
		j.Periodic.Canonicalize()
	}
	for _, a := range j.Affinities {
		a.Canonicalize()
	}
	for _, sp := range j.Spreads {
		sp.Canonicalize()
	}
	// Service and system jobs update one allocation at a time unless told
	// otherwise, as upstream's client fills in (the server deploys only
	// service jobs).
	if j.Update != nil {
		j.Update.Canonicalize()
	} else if *j.Type == JobTypeService || *j.Type == JobTypeSystem {
		j.Update = DefaultUpdateStrategy()
	}
	for _, g := range j.TaskGroups {
		g.Canonicalize(j)
	}
}

// JobListStub is the row `/v1/jobs` returns per job.
type JobListStub struct {
	ID                string
	ParentID          string
	Name              string
	Namespace         string `json:",omitempty"`
	Datacenters       []string
	Type              string
	Priority          int
	Periodic          bool
	ParameterizedJob  bool
	Stop              bool
	Status            string
	StatusDescription string
	JobSummary        *JobSummary
	CreateIndex       uint64
	ModifyIndex       uint64
	JobModifyIndex    uint64
	SubmitTime        int64
	Meta              map[string]string `json:",omitempty"`
}

// JobSummary counts a job's allocations per group and client status.
type JobSummary struct {
	JobID     string
	Namespace string
	Summary   map[string]TaskGroupSummary
	Children  *JobChildrenSummary

	CreateIndex uint64
	ModifyIndex uint64
}

// TaskGroupSummary counts one group's allocations by status. Unknown counts
// allocations on disconnected nodes: they are neither running nor lost, and
// an autoscaler must not treat them as missing capacity.
type TaskGroupSummary struct {
	Queued   int
	Complete int
	Failed   int
	Running  int
	Starting int
	Lost     int
	Unknown  int
}

// JobChildrenSummary counts the child jobs of a periodic or parameterized
// job by status.
type JobChildrenSummary struct {
	Pending int64
	Running int64
	Dead    int64
}

// JobRegisterRequest is the body of PUT /v1/jobs.
type JobRegisterRequest struct {
	Job *Job

	// EnforceIndex makes the registration conditional: it only succeeds when
	// the job's current JobModifyIndex equals JobModifyIndex (0: the job must
	// not exist yet). This is `job run -check-index`.
	EnforceIndex   bool   `json:",omitempty"`
	JobModifyIndex uint64 `json:",omitempty"`

	// EvalPriority, when set, is the priority of the evaluation the
	// registration creates instead of the job's.
	EvalPriority int `json:",omitempty"`

	// PreserveCounts keeps the count of every group the registered job
	// already has (`job run -preserve-counts`).
	PreserveCounts bool `json:",omitempty"`

	WriteRequest
}

// JobRegisterResponse answers a registration.
type JobRegisterResponse struct {
	EvalID          string
	EvalCreateIndex uint64
	JobModifyIndex  uint64
	// Warnings is a newline-separated list of non-fatal problems (for
	// example a deprecated field that was honoured).
	Warnings string
}

// JobDeregisterResponse answers a deregistration.
type JobDeregisterResponse struct {
	EvalID          string
	EvalCreateIndex uint64
	JobModifyIndex  uint64
}

// JobValidateRequest is the body of POST /v1/validate/job.
type JobValidateRequest struct {
	Job *Job
	WriteRequest
}

// JobValidateResponse lists every problem of a job at once.
type JobValidateResponse struct {
	DriverConfigValidated bool
	ValidationErrors      []string
	Error                 string
	Warnings              string
}

// JobsParseRequest is the body of POST /v1/jobs/parse.
type JobsParseRequest struct {
	JobHCL string
	// Variables is the content of a var file (name = value lines) giving
	// the job file's variables their values.
	Variables    string
	Canonicalize bool
}

// RegisterOptions tune Jobs.RegisterOpts.
type RegisterOptions struct {
	// EnforceIndex and ModifyIndex: see JobRegisterRequest.EnforceIndex.
	EnforceIndex bool
	ModifyIndex  uint64
	// EvalPriority: see JobRegisterRequest.EvalPriority.
	EvalPriority int
	// PreserveCounts: see JobRegisterRequest.PreserveCounts.
	PreserveCounts bool
}

// Jobs is the handle on the job endpoints.
type Jobs struct {
	client *Client
}

// Jobs returns the handle on the job endpoints.
func (c *Client) Jobs() *Jobs { return &Jobs{client: c} }

// Register submits a job (PUT /v1/jobs). The server validates and
// canonicalizes it; the answer names the evaluation that will schedule it.
func (j *Jobs) Register(job *Job, w *WriteOptions) (*JobRegisterResponse, *WriteMeta, error) {
	return j.RegisterOpts(job, nil, w)
}

// RegisterOpts is Register with options.
func (j *Jobs) RegisterOpts(job *Job, opts *RegisterOptions, w *WriteOptions) (*JobRegisterResponse, *WriteMeta, error) {
	req := &JobRegisterRequest{Job: job}
	if opts != nil && opts.EnforceIndex {
		req.EnforceIndex = true
		req.JobModifyIndex = opts.ModifyIndex
	}
	if opts != nil {
		req.EvalPriority = opts.EvalPriority
		req.PreserveCounts = opts.PreserveCounts
	}
	if w != nil {
		req.WriteRequest = WriteRequest{Region: w.Region, Namespace: w.Namespace}
	}
	var resp JobRegisterResponse
	wm, err := j.client.write(http.MethodPut, "/v1/jobs", req, &resp, w)
	if err != nil {
		return nil, nil, err
	}
	return &resp, wm, nil
}

// List returns the jobs (GET /v1/jobs), sorted by ID.
func (j *Jobs) List(q *QueryOptions) ([]*JobListStub, *QueryMeta, error) {
	var resp []*JobListStub
	qm, err := j.client.query("/v1/jobs", &resp, q)
	if err != nil {
		return nil, nil, err
	}
	slices.SortStableFunc(resp, func(a, b *JobListStub) int { return cmp.Compare(a.ID, b.ID) })
	return resp, qm, nil
}

// Info returns one job (GET /v1/job/:id).
func (j *Jobs) Info(jobID string, q *QueryOptions) (*Job, *QueryMeta, error) {
	var resp Job
	qm, err := j.client.query(jobPath(jobID, ""), &resp, q)
	if err != nil {
		return nil, nil, err
	}
	return &resp, qm, nil
}

// Allocations returns the job's allocations (GET /v1/job/:id/allocations),
// newest first. allAllocs also returns allocations of an earlier job that
// had the same ID (purged and registered again), which are otherwise hidden.
func (j *Jobs) Allocations(jobID string, allAllocs bool, q *QueryOptions) ([]*AllocationListStub, *QueryMeta, error) {
	var resp []*AllocationListStub
	path := jobPath(jobID, "/allocations") + "?all=" + strconv.FormatBool(allAllocs)
	qm, err := j.client.query(path, &resp, q)
	if err != nil {
		return nil, nil, err
	}
	sortAllocStubs(resp)
	return resp, qm, nil
}

// Evaluations returns the job's evaluations (GET /v1/job/:id/evaluations),
// newest first.
func (j *Jobs) Evaluations(jobID string, q *QueryOptions) ([]*Evaluation, *QueryMeta, error) {
	var resp []*Evaluation
	qm, err := j.client.query(jobPath(jobID, "/evaluations"), &resp, q)
	if err != nil {
		return nil, nil, err
	}
	sortEvals(resp)
	return resp, qm, nil
}

// Summary returns the job's allocation counts (GET /v1/job/:id/summary).
func (j *Jobs) Summary(jobID string, q *QueryOptions) (*JobSummary, *QueryMeta, error) {
	var resp JobSummary
	qm, err := j.client.query(jobPath(jobID, "/summary"), &resp, q)
	if err != nil {
		return nil, nil, err
	}
	return &resp, qm, nil
}

// Deregister stops a job (DELETE /v1/job/:id) and returns the ID of the
// evaluation that stops its allocations. purge also removes the job from
// the state store at once instead of leaving it, stopped, for the GC.
func (j *Jobs) Deregister(jobID string, purge bool, w *WriteOptions) (string, *WriteMeta, error) {
	return j.DeregisterOpts(jobID, &DeregisterOptions{Purge: purge}, w)
}

// DeregisterOptions tune a deregistration.
type DeregisterOptions struct {
	// Purge removes the job at once instead of leaving it stopped.
	Purge bool
	// EvalPriority, when set, is the priority of the evaluation created
	// instead of the job's.
	EvalPriority int
	// NoShutdownDelay asks the clients to skip the groups' and tasks'
	// shutdown_delay when they stop the job's allocations.
	NoShutdownDelay bool
}

// DeregisterOpts is Deregister with options.
func (j *Jobs) DeregisterOpts(jobID string, opts *DeregisterOptions, w *WriteOptions) (string, *WriteMeta, error) {
	if opts == nil {
		opts = &DeregisterOptions{}
	}
	var resp JobDeregisterResponse
	path := jobPath(jobID, "") + "?purge=" + strconv.FormatBool(opts.Purge)
	if opts.EvalPriority != 0 {
		path += "&eval_priority=" + strconv.Itoa(opts.EvalPriority)
	}
	if opts.NoShutdownDelay {
		path += "&no_shutdown_delay=true"
	}
	wm, err := j.client.write(http.MethodDelete, path, nil, &resp, w)
	if err != nil {
		return "", nil, err
	}
	return resp.EvalID, wm, nil
}

// ParseHCL asks the agent to parse a job file (POST /v1/jobs/parse), so
// that tools without an HCL parser can submit job files. canonicalize asks
// for the defaults to be filled in.
func (j *Jobs) ParseHCL(src string, canonicalize bool) (*Job, error) {
	req := &JobsParseRequest{JobHCL: src, Canonicalize: canonicalize}
	var job Job
	if _, err := j.client.write(http.MethodPost, "/v1/jobs/parse", req, &job, nil); err != nil {
		return nil, err
	}
	return &job, nil
}

// Validate checks a job without registering it (POST /v1/validate/job).
// Validation problems come back in the response, not as an error; the
// error is for transport and server failures.
func (j *Jobs) Validate(job *Job, w *WriteOptions) (*JobValidateResponse, *WriteMeta, error) {
	req := &JobValidateRequest{Job: job}
	if w != nil {
		req.WriteRequest = WriteRequest{Region: w.Region, Namespace: w.Namespace}
	}
	var resp JobValidateResponse
	wm, err := j.client.write(http.MethodPost, "/v1/validate/job", req, &resp, w)
	if err != nil {
		return nil, nil, err
	}
	return &resp, wm, nil
}

func jobPath(jobID, suffix string) string {
	return "/v1/job/" + pathID(jobID) + suffix
}

// JobScaleStatusResponse is a job's scaling status.
type JobScaleStatusResponse struct {
	JobID          string
	Namespace      string
	JobCreateIndex uint64
	JobModifyIndex uint64
	JobStopped     bool
	TaskGroups     map[string]TaskGroupScaleStatus
}

// TaskGroupScaleStatus counts a group's allocations for an autoscaler.
// Placed includes allocations on disconnected nodes, which are also
// counted in Unknown (our addition to upstream's shape).
type TaskGroupScaleStatus struct {
	Desired   int
	Placed    int
	Running   int
	Healthy   int
	Unhealthy int
	Unknown   int
	// Reconnecting and Unstable are ours: allocations whose reconnect is
	// unresolved, and why a count change derived from Running is refused
	// now ("" when the group is stable).
	Reconnecting int    `json:",omitempty"`
	Unstable     string `json:",omitempty"`
	Events       []ScalingEvent
}

// ScalingEvent is one recorded scaling action, newest first in a group's
// Events. Time is Unix nanoseconds; Count is nil for an event that changed
// no count.
type ScalingEvent struct {
	Time          uint64
	Count         *int64
	PreviousCount int64
	Message       string
	Error         bool
	Meta          map[string]any
	EvalID        *string
	CreateIndex   uint64
}

// ScaleStatus returns the job's scaling status (GET /v1/job/:id/scale).
func (j *Jobs) ScaleStatus(jobID string, q *QueryOptions) (*JobScaleStatusResponse, *QueryMeta, error) {
	var resp JobScaleStatusResponse
	qm, err := j.client.query(jobPath(jobID, "/scale"), &resp, q)
	if err != nil {
		return nil, nil, err
	}
	return &resp, qm, nil
}
