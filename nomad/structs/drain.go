package structs

import "time"

// Node drain event messages and statuses, as upstream names them.
const (
	NodeEventSubsystemDrain        = "Drain"
	NodeDrainEventDrainSet         = "Node drain strategy set"
	NodeDrainEventDrainDisabled    = "Node drain disabled"
	NodeDrainEventDrainUpdated     = "Node drain strategy updated"
	NodeDrainEventComplete         = "Node drain complete"
	NodeEligibilityEventEligible   = "Node marked as eligible for scheduling"
	NodeEligibilityEventIneligible = "Node marked as ineligible for scheduling"

	DrainStatusDraining = "draining"
	DrainStatusComplete = "complete"
	DrainStatusCanceled = "canceled"
)

// DrainSpec is what an operator asks of a drain.
type DrainSpec struct {
	// Deadline is how long allocations may take to migrate; after it the
	// remaining ones are stopped. Negative forces the deadline now; zero
	// means no deadline.
	Deadline time.Duration
	// IgnoreSystemJobs leaves system allocations running on the node.
	IgnoreSystemJobs bool
}

// DrainStrategy is a drain in progress on a node.
type DrainStrategy struct {
	DrainSpec
	// ForceDeadline is when the remaining allocations are stopped; zero
	// when the drain has no deadline.
	ForceDeadline time.Time
	// StartedAt is when the drain was set.
	StartedAt time.Time
}

// Copy returns a copy.
func (d *DrainStrategy) Copy() *DrainStrategy {
	if d == nil {
		return nil
	}
	c := *d
	return &c
}

// DeadlineTime reports whether the drain has a deadline and when it is.
func (d *DrainStrategy) DeadlineTime() (bool, time.Time) {
	if d == nil || d.Deadline == 0 {
		return false, time.Time{}
	}
	return true, d.ForceDeadline
}

// DrainMetadata records the last drain of a node (Node.LastDrain).
type DrainMetadata struct {
	StartedAt  time.Time
	UpdatedAt  time.Time
	Status     string
	AccessorID string
	Meta       map[string]string
}

// Copy returns a copy.
func (m *DrainMetadata) Copy() *DrainMetadata {
	if m == nil {
		return nil
	}
	c := *m
	if m.Meta != nil {
		c.Meta = make(map[string]string, len(m.Meta))
		for k, v := range m.Meta {
			c.Meta[k] = v
		}
	}
	return &c
}

// NodeUpdateDrainRequest starts, updates or ends a drain (Node.UpdateDrain,
// and the drainer when a drain completes).
type NodeUpdateDrainRequest struct {
	NodeID string
	// DrainStrategy starts or updates the drain; nil ends it.
	DrainStrategy *DrainStrategy
	// MarkEligible, when ending a drain, makes the node eligible again.
	MarkEligible bool
	// Meta is stored on the node's LastDrain.
	Meta map[string]string
	// Complete says the drainer ended the drain because it is done.
	Complete  bool
	NodeEvent *NodeEvent
	// UpdatedAt is the server's time of the change.
	UpdatedAt time.Time
	WriteRequest
}

// NodeUpdateEligibilityRequest sets a node's scheduling eligibility.
type NodeUpdateEligibilityRequest struct {
	NodeID      string
	Eligibility string
	NodeEvent   *NodeEvent
	UpdatedAt   time.Time
	WriteRequest
}

// NodeDrainUpdateResponse answers Node.UpdateDrain.
type NodeDrainUpdateResponse struct {
	NodeModifyIndex uint64
	EvalIDs         []string
	EvalCreateIndex uint64
	WriteMeta
}

// NodeEligibilityUpdateResponse answers Node.UpdateEligibility.
type NodeEligibilityUpdateResponse struct {
	NodeModifyIndex uint64
	EvalIDs         []string
	EvalCreateIndex uint64
	WriteMeta
}

// NodePurgeRequest removes a node from the cluster state (Node.Purge).
type NodePurgeRequest struct {
	NodeID string
	// Evals re-evaluate the jobs that had allocations on the node.
	Evals []*Evaluation
	WriteRequest
}

// NodeEvaluateRequest asks for the node's jobs to be evaluated again
// (PUT /v1/node/:id/evaluate).
type NodeEvaluateRequest struct {
	NodeID string
	WriteRequest
}

// NodeEvaluateResponse answers Node.Evaluate with the evaluations created.
type NodeEvaluateResponse struct {
	EvalIDs         []string
	EvalCreateIndex uint64
	NodeModifyIndex uint64
	WriteMeta
}

// NodePurgeResponse answers Node.Purge.
type NodePurgeResponse struct {
	EvalIDs         []string
	EvalCreateIndex uint64
	NodeModifyIndex uint64
	WriteMeta
}
