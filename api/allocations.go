package api

import (
	"cmp"
	"net/http"
	"net/url"
	"slices"
	"time"
)

// Allocation desired statuses: what the server wants.
const (
	AllocDesiredStatusRun   = "run"
	AllocDesiredStatusStop  = "stop"
	AllocDesiredStatusEvict = "evict"
)

// Allocation client statuses: what the client reports (or, for unknown and
// lost, what the server concludes while it cannot hear the client).
const (
	AllocClientStatusPending  = "pending"
	AllocClientStatusRunning  = "running"
	AllocClientStatusComplete = "complete"
	AllocClientStatusFailed   = "failed"
	AllocClientStatusLost     = "lost"
	// AllocClientStatusUnknown marks an allocation whose node is
	// disconnected. It is NOT terminal: the allocation may still be running
	// and will report again when its node reconnects.
	AllocClientStatusUnknown = "unknown"
)

// Allocation is the placement of one instance of a task group on a node.
type Allocation struct {
	ID                 string
	Namespace          string
	EvalID             string
	Name               string
	NodeID             string
	NodeName           string
	JobID              string
	Job                *Job
	TaskGroup          string
	AllocatedResources *AllocatedResources
	Metrics            *AllocationMetric
	DesiredStatus      string
	DesiredDescription string
	DesiredTransition  DesiredTransition
	ClientStatus       string
	ClientDescription  string
	TaskStates         map[string]*TaskState
	// AllocStates is the server-stamped history of client status changes.
	// Upstream's client library has no such field (its server sends it all
	// the same); the disconnect logic needs it to know since when an
	// allocation has been unknown.
	AllocStates        []*AllocState
	FollowupEvalID     string
	PreviousAllocation string
	NextAllocation     string
	RescheduleTracker  *RescheduleTracker
	DeploymentID       string
	DeploymentStatus   *AllocDeploymentStatus
	// PreemptedAllocations are the allocations evicted to make room for
	// this one; PreemptedByAllocation the one this was evicted for.
	PreemptedAllocations  []string
	PreemptedByAllocation string
	// ReconnectDecision is how the servers resolved the last reconnect this
	// allocation took part in (kept or stopped). Ours only: upstream has no
	// such record, and its client library ignores the field.
	ReconnectDecision *ReconnectDecision `json:",omitempty"`
	// DisconnectPolicy is the disconnect policy that applies to the
	// allocation and where it came from (its group or its node pool), as
	// the servers resolved it. Ours only; set by GET /v1/allocation/:id.
	DisconnectPolicy *AllocDisconnectPolicy `json:",omitempty"`
	CreateIndex      uint64
	ModifyIndex      uint64
	AllocModifyIndex uint64
	CreateTime       int64
	ModifyTime       int64
}

// ReconnectDecision names the rule that kept one copy of an instance and
// stopped the other when a disconnected node came back, with the group's
// strategy and the placement score of each copy. Time is in Unix
// nanoseconds.
type ReconnectDecision struct {
	Rule           string
	Strategy       string
	KeptAllocID    string
	StoppedAllocID string
	KeptScore      float64
	StoppedScore   float64
	EvalID         string
	Time           int64
}

// ServerTerminalStatus reports whether the server wants the allocation
// stopped (desired stop or evict).
func (a *Allocation) ServerTerminalStatus() bool {
	return a.DesiredStatus == AllocDesiredStatusStop || a.DesiredStatus == AllocDesiredStatusEvict
}

// ClientTerminalStatus reports whether the allocation will never run again:
// complete, failed or lost. Unknown is deliberately not terminal: the
// allocation may still be running on a node we cannot hear.
func (a *Allocation) ClientTerminalStatus() bool {
	switch a.ClientStatus {
	case AllocClientStatusComplete, AllocClientStatusFailed, AllocClientStatusLost:
		return true
	default:
		return false
	}
}

// AllocStateField names what an AllocState entry records. It is a number on
// the wire, as upstream's server encodes it.
type AllocStateField uint8

// AllocStateFieldClientStatus is the only field recorded today.
const AllocStateFieldClientStatus AllocStateField = 0

// AllocState is one entry of an allocation's status history, stamped with
// server time.
type AllocState struct {
	Field AllocStateField
	Value string
	Time  time.Time
}

// DesiredTransition carries the server's pending intents for an allocation
// that do not change its desired status yet.
type DesiredTransition struct {
	Migrate         *bool
	Reschedule      *bool
	ForceReschedule *bool
}

// RescheduleTracker is the chain of reschedules that led to an allocation.
type RescheduleTracker struct {
	Events []*RescheduleEvent
}

// RescheduleEvent is one reschedule: which allocation on which node was
// replaced, and when (Unix nanoseconds).
type RescheduleEvent struct {
	RescheduleTime int64
	PrevAllocID    string
	PrevNodeID     string
	// Delay is the reschedule delay this attempt waited. Upstream's client
	// library has no such field (its server sends it all the same); the
	// next delay of an exponential or fibonacci policy grows from it.
	Delay time.Duration
}

// AllocationMetric explains a placement decision (or a failure to place).
type AllocationMetric struct {
	NodesEvaluated     int
	NodesFiltered      int
	NodesInPool        int
	NodePool           string
	NodesAvailable     map[string]int
	ClassFiltered      map[string]int
	ConstraintFiltered map[string]int
	NodesExhausted     int
	ClassExhausted     map[string]int
	DimensionExhausted map[string]int
	QuotaExhausted     []string
	ResourcesExhausted map[string]*Resources
	// Scores is upstream's older form of ScoreMetaData.
	Scores            map[string]float64
	AllocationTime    time.Duration
	CoalescedFailures int
	// ScoreMetaData holds the top candidate nodes with their scores at
	// placement time. The reconnect logic compares these recorded scores
	// (never recomputed ones) to pick the surviving copy.
	ScoreMetaData []*NodeScoreMeta
}

// NodeScoreMeta is one candidate node's scores: per scorer, and normalised.
type NodeScoreMeta struct {
	NodeID    string
	Scores    map[string]float64
	NormScore float64
}

// AllocationListStub is the row list endpoints return per allocation.
type AllocationListStub struct {
	ID                 string
	EvalID             string
	Name               string
	Namespace          string
	NodeID             string
	NodeName           string
	JobID              string
	JobType            string
	JobVersion         uint64
	TaskGroup          string
	AllocatedResources *AllocatedResources `json:",omitempty"`
	DesiredStatus      string
	DesiredDescription string
	ClientStatus       string
	ClientDescription  string
	TaskStates         map[string]*TaskState
	FollowupEvalID     string
	NextAllocation     string
	RescheduleTracker  *RescheduleTracker
	DeploymentStatus   *AllocDeploymentStatus
	CreateIndex        uint64
	ModifyIndex        uint64
	CreateTime         int64
	ModifyTime         int64
}

// Allocations is the handle on the allocation endpoints.
type Allocations struct {
	client *Client
}

// Allocations returns the handle on the allocation endpoints.
func (c *Client) Allocations() *Allocations { return &Allocations{client: c} }

// List returns allocations (GET /v1/allocations), newest first.
func (a *Allocations) List(q *QueryOptions) ([]*AllocationListStub, *QueryMeta, error) {
	var resp []*AllocationListStub
	qm, err := a.client.query("/v1/allocations", &resp, q)
	if err != nil {
		return nil, nil, err
	}
	sortAllocStubs(resp)
	return resp, qm, nil
}

// Info returns one allocation (GET /v1/allocation/:id).
func (a *Allocations) Info(allocID string, q *QueryOptions) (*Allocation, *QueryMeta, error) {
	var resp Allocation
	qm, err := a.client.query("/v1/allocation/"+pathID(allocID), &resp, q)
	if err != nil {
		return nil, nil, err
	}
	return &resp, qm, nil
}

// sortAllocStubs orders newest first (highest CreateIndex), the order every
// CLI listing shows.
func sortAllocStubs(s []*AllocationListStub) {
	slices.SortStableFunc(s, func(a, b *AllocationListStub) int { return cmp.Compare(b.CreateIndex, a.CreateIndex) })
}

func sortAllocs(s []*Allocation) {
	slices.SortStableFunc(s, func(a, b *Allocation) int { return cmp.Compare(b.CreateIndex, a.CreateIndex) })
}

// AllocStopResponse is the answer to an allocation stop: the evaluation
// that stops and replaces it.
type AllocStopResponse struct {
	EvalID string
	WriteMeta
}

// Stop stops an allocation and has the scheduler replace it
// (PUT /v1/allocation/:id/stop).
func (a *Allocations) Stop(alloc *Allocation, q *QueryOptions) (*AllocStopResponse, error) {
	var resp AllocStopResponse
	var w *WriteOptions
	path := "/v1/allocation/" + pathID(alloc.ID) + "/stop"
	if q != nil {
		w = (&WriteOptions{Region: q.Region, Namespace: q.Namespace}).WithContext(q.Context())
		// Params such as no_shutdown_delay travel in the query string.
		if len(q.Params) > 0 {
			v := url.Values{}
			for k, p := range q.Params {
				v.Set(k, p)
			}
			path += "?" + v.Encode()
		}
	}
	wm, err := a.client.write(http.MethodPut, path, nil, &resp, w)
	if err != nil {
		return nil, err
	}
	resp.WriteMeta = *wm
	return &resp, nil
}

// AllocDisconnectPolicy is an allocation's effective disconnect policy.
// Source is "group", "node pool" or "none"; LostAfter is in nanoseconds.
type AllocDisconnectPolicy struct {
	LostAfter time.Duration
	Replace   bool
	Reconcile string
	Source    string
	Pool      string
	Summary   string
}
