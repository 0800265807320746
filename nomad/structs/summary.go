package structs

import "maps"

// JobSummary counts a job's allocations by client status, per group.
type JobSummary struct {
	JobID       string
	Namespace   string
	Summary     map[string]TaskGroupSummary
	Children    *JobChildrenSummary
	CreateIndex uint64
	ModifyIndex uint64
}

// Copy returns a deep copy.
func (s *JobSummary) Copy() *JobSummary {
	if s == nil {
		return nil
	}
	n := *s
	n.Summary = maps.Clone(s.Summary)
	if s.Children != nil {
		c := *s.Children
		n.Children = &c
	}
	return &n
}

// JobChildrenSummary counts the children of a parameterized or periodic job.
type JobChildrenSummary struct {
	Pending int64
	Running int64
	Dead    int64
}

// TaskGroupSummary counts a group's allocations. Unknown counts allocations
// on disconnected nodes: placed, possibly running, not terminal.
type TaskGroupSummary struct {
	Queued   int
	Complete int
	Failed   int
	Running  int
	Starting int
	Lost     int
	Unknown  int
}

// JobScaleStatus is what /v1/job/:id/scale reports to autoscalers: per
// group, the count asked for and what stands behind it.
type JobScaleStatus struct {
	JobID          string
	Namespace      string
	JobCreateIndex uint64
	JobModifyIndex uint64
	JobStopped     bool
	TaskGroups     map[string]*TaskGroupScaleStatus
}

// TaskGroupScaleStatus counts a group's allocations for scaling decisions.
// Placed includes allocations whose node is disconnected (Unknown): they
// may well be running, and an autoscaler that counted them as missing
// would provision twice.
type TaskGroupScaleStatus struct {
	Desired   int
	Placed    int
	Running   int
	Healthy   int
	Unhealthy int
	// Unknown is our addition to upstream's shape: placed allocations
	// whose node cannot be reached.
	Unknown int
	// Reconnecting (ours) counts allocations whose node came back and
	// whose reconnect the servers have not resolved yet: the group may
	// run more than Desired until they do.
	Reconnecting int `json:",omitempty"`
	// Unstable (ours) says why the group's count may not be changed in
	// the direction an autoscaler would read from Running (see
	// TaskGroupScaleStatus.CheckScale); empty when it is stable.
	Unstable string `json:",omitempty"`
	Events   []*ScalingEvent
}

// ScalingEvent records a scaling action on one group: a count change made
// through the scale endpoint, or a report (an autoscaler's error) without
// one. Time is server time in Unix nanoseconds.
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

// JobTrackedScalingEvents is how many scaling events the servers keep per
// group, as upstream.
const JobTrackedScalingEvents = 20

// JobScalingEvents is a job's scaling history, newest event first per
// group.
type JobScalingEvents struct {
	Namespace     string
	JobID         string
	ScalingEvents map[string][]*ScalingEvent
	ModifyIndex   uint64
}

// ScalingEventRequest records one scaling event of a job's group.
type ScalingEventRequest struct {
	Namespace    string
	JobID        string
	TaskGroup    string
	ScalingEvent *ScalingEvent
}

// JobScaleStatusResponse answers Job.ScaleStatus.
type JobScaleStatusResponse struct {
	JobScaleStatus *JobScaleStatus
	QueryMeta
}
