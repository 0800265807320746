package api

import (
	"net/http"
	"time"
)

// Drain statuses recorded in Node.LastDrain.
const (
	DrainStatusDraining = "draining"
	DrainStatusComplete = "complete"
	DrainStatusCanceled = "canceled"
)

// DrainSpec is what an operator asks of a drain.
type DrainSpec struct {
	// Deadline is how long allocations may take to move; after it the
	// remaining ones are stopped. Negative forces it now; zero means none.
	Deadline time.Duration
	// IgnoreSystemJobs leaves system allocations on the node.
	IgnoreSystemJobs bool
}

// DrainStrategy is a drain in progress (Node.DrainStrategy).
type DrainStrategy struct {
	DrainSpec
	ForceDeadline time.Time
	StartedAt     time.Time
}

// DrainMetadata records a node's last drain (Node.LastDrain).
type DrainMetadata struct {
	StartedAt  time.Time
	UpdatedAt  time.Time
	Status     string
	AccessorID string
	Meta       map[string]string
}

// DrainOptions are the parameters of UpdateDrainOpts.
type DrainOptions struct {
	// DrainSpec starts or updates the drain; nil ends it.
	DrainSpec *DrainSpec
	// MarkEligible, when ending a drain, makes the node eligible again.
	MarkEligible bool
	// Meta is recorded on the node's LastDrain.
	Meta map[string]string
}

// NodeUpdateDrainRequest is the body of PUT /v1/node/:id/drain.
type NodeUpdateDrainRequest struct {
	NodeID       string
	DrainSpec    *DrainSpec
	MarkEligible bool
	Meta         map[string]string
}

// NodeDrainUpdateResponse answers a drain update.
type NodeDrainUpdateResponse struct {
	NodeModifyIndex uint64
	EvalIDs         []string
	EvalCreateIndex uint64
	WriteMeta
}

// NodeUpdateEligibilityRequest is the body of PUT /v1/node/:id/eligibility.
type NodeUpdateEligibilityRequest struct {
	NodeID      string
	Eligibility string
}

// NodeEligibilityUpdateResponse answers an eligibility update.
type NodeEligibilityUpdateResponse struct {
	NodeModifyIndex uint64
	EvalIDs         []string
	EvalCreateIndex uint64
	WriteMeta
}

// NodePurgeResponse answers a purge.
type NodePurgeResponse struct {
	EvalIDs         []string
	EvalCreateIndex uint64
	NodeModifyIndex uint64
}

// UpdateDrain starts (spec set) or ends (spec nil) a node's drain
// (PUT /v1/node/:id/drain).
func (n *Nodes) UpdateDrain(nodeID string, spec *DrainSpec, markEligible bool, w *WriteOptions) (*NodeDrainUpdateResponse, error) {
	return n.UpdateDrainOpts(nodeID, &DrainOptions{DrainSpec: spec, MarkEligible: markEligible}, w)
}

// UpdateDrainOpts is UpdateDrain with metadata.
func (n *Nodes) UpdateDrainOpts(nodeID string, opts *DrainOptions, w *WriteOptions) (*NodeDrainUpdateResponse, error) {
	req := &NodeUpdateDrainRequest{NodeID: nodeID, DrainSpec: opts.DrainSpec, MarkEligible: opts.MarkEligible, Meta: opts.Meta}
	var resp NodeDrainUpdateResponse
	wm, err := n.client.write(http.MethodPut, "/v1/node/"+pathID(nodeID)+"/drain", req, &resp, w)
	if err != nil {
		return nil, err
	}
	resp.WriteMeta = *wm
	return &resp, nil
}

// ToggleEligibility marks a node eligible or ineligible for placements
// (PUT /v1/node/:id/eligibility).
func (n *Nodes) ToggleEligibility(nodeID string, eligible bool, w *WriteOptions) (*NodeEligibilityUpdateResponse, error) {
	e := NodeSchedulingEligible
	if !eligible {
		e = NodeSchedulingIneligible
	}
	var resp NodeEligibilityUpdateResponse
	wm, err := n.client.write(http.MethodPut, "/v1/node/"+pathID(nodeID)+"/eligibility",
		&NodeUpdateEligibilityRequest{NodeID: nodeID, Eligibility: e}, &resp, w)
	if err != nil {
		return nil, err
	}
	resp.WriteMeta = *wm
	return &resp, nil
}

// Purge removes a node from the servers' state (PUT /v1/node/:id/purge).
func (n *Nodes) Purge(nodeID string, w *WriteOptions) (*NodePurgeResponse, error) {
	var resp NodePurgeResponse
	if _, err := n.client.write(http.MethodPut, "/v1/node/"+pathID(nodeID)+"/purge", nil, &resp, w); err != nil {
		return nil, err
	}
	return &resp, nil
}
