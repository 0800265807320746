package structs

import "time"

// DeploymentListRequest lists deployments.
type DeploymentListRequest struct {
	QueryOptions
}

// DeploymentListResponse lists deployments.
type DeploymentListResponse struct {
	Deployments []*Deployment
	QueryMeta
}

// DeploymentSpecificRequest names one deployment.
type DeploymentSpecificRequest struct {
	DeploymentID string
	QueryOptions
}

// SingleDeploymentResponse returns one deployment, nil when there is none.
type SingleDeploymentResponse struct {
	Deployment *Deployment
	QueryMeta
}

// JobDeploymentsRequest asks for a job's deployments (or its latest).
type JobDeploymentsRequest struct {
	JobID string
	QueryOptions
}

// JobDeploymentsResponse lists a job's deployments, newest first.
type JobDeploymentsResponse struct {
	Deployments []*Deployment
	QueryMeta
}

// DeploymentStatusUpdateRequest is the raft entry of a deployment status
// change: its verdict, the job to register when it rolls back, and the
// evaluation that carries the change to the scheduler, in one entry.
type DeploymentStatusUpdateRequest struct {
	DeploymentUpdate *DeploymentStatusUpdate
	Job              *Job
	Eval             *Evaluation
	// StableVersion, when set, marks that job version stable (a
	// successful deployment's verdict).
	StableVersion *uint64
	UpdatedAt     int64
	WriteRequest
}

// DeploymentPromoteRequest promotes canaries: all groups or the named ones.
type DeploymentPromoteRequest struct {
	DeploymentID string
	All          bool
	Groups       []string
	WriteRequest
}

// ApplyDeploymentPromoteRequest is the raft entry of a promotion.
type ApplyDeploymentPromoteRequest struct {
	DeploymentPromoteRequest
	Eval      *Evaluation
	UpdatedAt int64
}

// DeploymentPauseRequest pauses or resumes a deployment.
type DeploymentPauseRequest struct {
	DeploymentID string
	Pause        bool
	WriteRequest
}

// DeploymentFailRequest fails a deployment.
type DeploymentFailRequest struct {
	DeploymentID string
	WriteRequest
}

// DeploymentAllocHealthRequest sets allocation health by hand (the
// `manual` health check).
type DeploymentAllocHealthRequest struct {
	DeploymentID           string
	HealthyAllocationIDs   []string
	UnhealthyAllocationIDs []string
	WriteRequest
}

// ApplyDeploymentAllocHealthRequest is the raft entry of a manual health
// report. It only ever touches DeploymentStatus: a health report must never
// carry a client status (see website/content/docs/concepts/disconnected-clients.md,
// "Deployments").
type ApplyDeploymentAllocHealthRequest struct {
	DeploymentAllocHealthRequest
	Timestamp        time.Time
	DeploymentUpdate *DeploymentStatusUpdate
	Job              *Job
	Eval             *Evaluation
}

// DeploymentUpdateResponse answers a deployment change.
type DeploymentUpdateResponse struct {
	EvalID                string
	EvalCreateIndex       uint64
	DeploymentModifyIndex uint64
	RevertedJobVersion    *uint64
	WriteMeta
}
