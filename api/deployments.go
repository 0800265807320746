package api

import (
	"net/http"
	"time"
)

// Deployment statuses.
const (
	DeploymentStatusRunning    = "running"
	DeploymentStatusPaused     = "paused"
	DeploymentStatusFailed     = "failed"
	DeploymentStatusSuccessful = "successful"
	DeploymentStatusCancelled  = "cancelled"
)

// Deployment is the rollout of one job version (upstream's shape).
type Deployment struct {
	ID                 string
	Namespace          string
	JobID              string
	JobVersion         uint64
	JobModifyIndex     uint64
	JobSpecModifyIndex uint64
	JobCreateIndex     uint64
	IsMultiregion      bool
	TaskGroups         map[string]*DeploymentState
	Status             string
	StatusDescription  string
	EvalPriority       int
	CreateIndex        uint64
	ModifyIndex        uint64
	CreateTime         int64
	ModifyTime         int64
}

// DeploymentState is one group's progress in a deployment.
type DeploymentState struct {
	PlacedCanaries    []string
	AutoRevert        bool
	ProgressDeadline  time.Duration
	RequireProgressBy time.Time
	Promoted          bool
	DesiredCanaries   int
	DesiredTotal      int
	PlacedAllocs      int
	HealthyAllocs     int
	UnhealthyAllocs   int
	AutoPromote       bool
}

// AllocDeploymentStatus is an allocation's health in its deployment.
type AllocDeploymentStatus struct {
	Healthy     *bool
	Timestamp   time.Time
	Canary      bool
	ModifyIndex uint64
}

// DeploymentUpdateResponse answers a deployment change.
type DeploymentUpdateResponse struct {
	EvalID                string
	EvalCreateIndex       uint64
	DeploymentModifyIndex uint64
	RevertedJobVersion    *uint64
}

// DeploymentPromoteRequest is the body of PUT /v1/deployment/promote/:id.
type DeploymentPromoteRequest struct {
	DeploymentID string
	All          bool
	Groups       []string
	WriteRequest
}

// DeploymentPauseRequest is the body of PUT /v1/deployment/pause/:id.
type DeploymentPauseRequest struct {
	DeploymentID string
	Pause        bool
	WriteRequest
}

// DeploymentFailRequest is the body of PUT /v1/deployment/fail/:id.
type DeploymentFailRequest struct {
	DeploymentID string
	WriteRequest
}

// DeploymentAllocHealthRequest is the body of
// PUT /v1/deployment/allocation-health/:id.
type DeploymentAllocHealthRequest struct {
	DeploymentID           string
	HealthyAllocationIDs   []string
	UnhealthyAllocationIDs []string
	WriteRequest
}

// Deployments is the deployments endpoint.
type Deployments struct {
	client *Client
}

// Deployments returns the deployments endpoint.
func (c *Client) Deployments() *Deployments { return &Deployments{client: c} }

// List returns deployments, newest first.
func (d *Deployments) List(q *QueryOptions) ([]*Deployment, *QueryMeta, error) {
	var out []*Deployment
	qm, err := d.client.query("/v1/deployments", &out, q)
	return out, qm, err
}

// PrefixList returns the deployments whose ID starts with prefix.
func (d *Deployments) PrefixList(prefix string) ([]*Deployment, *QueryMeta, error) {
	return d.List(&QueryOptions{Prefix: prefix})
}

// Info returns one deployment.
func (d *Deployments) Info(id string, q *QueryOptions) (*Deployment, *QueryMeta, error) {
	var out Deployment
	qm, err := d.client.query("/v1/deployment/"+pathID(id), &out, q)
	if err != nil {
		return nil, nil, err
	}
	return &out, qm, nil
}

// Allocations returns the allocations a deployment placed or updated.
func (d *Deployments) Allocations(id string, q *QueryOptions) ([]*AllocationListStub, *QueryMeta, error) {
	var out []*AllocationListStub
	qm, err := d.client.query("/v1/deployment/allocations/"+pathID(id), &out, q)
	return out, qm, err
}

// Fail fails a deployment (rolling back when the group asks for it).
func (d *Deployments) Fail(id string, w *WriteOptions) (*DeploymentUpdateResponse, *WriteMeta, error) {
	return d.update("fail", id, &DeploymentFailRequest{DeploymentID: id}, w)
}

// Pause pauses (pause = true) or resumes a deployment.
func (d *Deployments) Pause(id string, pause bool, w *WriteOptions) (*DeploymentUpdateResponse, *WriteMeta, error) {
	return d.update("pause", id, &DeploymentPauseRequest{DeploymentID: id, Pause: pause}, w)
}

// PromoteAll promotes the canaries of every group.
func (d *Deployments) PromoteAll(id string, w *WriteOptions) (*DeploymentUpdateResponse, *WriteMeta, error) {
	return d.update("promote", id, &DeploymentPromoteRequest{DeploymentID: id, All: true}, w)
}

// PromoteGroups promotes the canaries of the named groups.
func (d *Deployments) PromoteGroups(id string, groups []string, w *WriteOptions) (*DeploymentUpdateResponse, *WriteMeta, error) {
	return d.update("promote", id, &DeploymentPromoteRequest{DeploymentID: id, Groups: groups}, w)
}

// SetAllocHealth reports allocation health by hand.
func (d *Deployments) SetAllocHealth(id string, healthy, unhealthy []string, w *WriteOptions) (*DeploymentUpdateResponse, *WriteMeta, error) {
	return d.update("allocation-health", id, &DeploymentAllocHealthRequest{
		DeploymentID: id, HealthyAllocationIDs: healthy, UnhealthyAllocationIDs: unhealthy,
	}, w)
}

func (d *Deployments) update(action, id string, body any, w *WriteOptions) (*DeploymentUpdateResponse, *WriteMeta, error) {
	var out DeploymentUpdateResponse
	wm, err := d.client.write(http.MethodPut, "/v1/deployment/"+action+"/"+pathID(id), body, &out, w)
	if err != nil {
		return nil, nil, err
	}
	return &out, wm, nil
}

// Deployments returns a job's deployments, newest first.
func (j *Jobs) Deployments(jobID string, q *QueryOptions) ([]*Deployment, *QueryMeta, error) {
	var out []*Deployment
	qm, err := j.client.query(jobPath(jobID, "/deployments"), &out, q)
	return out, qm, err
}

// LatestDeployment returns a job's newest deployment, nil when it has none.
func (j *Jobs) LatestDeployment(jobID string, q *QueryOptions) (*Deployment, *QueryMeta, error) {
	var out *Deployment
	qm, err := j.client.query(jobPath(jobID, "/deployment"), &out, q)
	return out, qm, err
}
