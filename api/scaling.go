package api

import "errors"

// ScalingPolicyTypeHorizontal is the type of a group's scaling policy: it
// changes the group's count.
const ScalingPolicyTypeHorizontal = "horizontal"

// Keys of a scaling policy's Target.
const (
	ScalingTargetNamespace = "Namespace"
	ScalingTargetJob       = "Job"
	ScalingTargetGroup     = "Group"
)

// ScalingPolicy is a group's `scaling` block in upstream's wire shape. The
// servers read Min, Max and Enabled; Policy belongs to the autoscaler and
// comes back exactly as given (nested blocks as lists of maps, labelled
// ones keyed by their label). ID, Type, Target and the indexes are the
// servers'.
type ScalingPolicy struct {
	ID          string
	Namespace   string
	Type        string
	Target      map[string]string
	Min         *int64
	Max         *int64
	Policy      map[string]any
	Enabled     *bool
	CreateIndex uint64
	ModifyIndex uint64
}

// Canonicalize fills upstream's defaults: enabled, min = the group's count,
// type horizontal. Max has no default: the servers refuse a policy
// without one.
func (p *ScalingPolicy) Canonicalize(count int) {
	if p.Enabled == nil {
		p.Enabled = new(true)
	}
	if p.Min == nil {
		p.Min = new(int64(count))
	}
	if p.Type == "" {
		p.Type = ScalingPolicyTypeHorizontal
	}
}

// ScalingPolicyListStub is the list form of a scaling policy, as
// /v1/scaling/policies returns it.
type ScalingPolicyListStub struct {
	ID          string
	Enabled     bool
	Type        string
	Target      map[string]string
	CreateIndex uint64
	ModifyIndex uint64
}

// Scaling is the handle on /v1/scaling/*.
type Scaling struct {
	client *Client
}

// Scaling returns the handle on scaling policies.
func (c *Client) Scaling() *Scaling { return &Scaling{client: c} }

// ListPolicies lists the scaling policies in the query's namespace ("*":
// every namespace the caller may read). q.Params may filter on "job" and
// "type".
func (s *Scaling) ListPolicies(q *QueryOptions) ([]*ScalingPolicyListStub, *QueryMeta, error) {
	var out []*ScalingPolicyListStub
	qm, err := s.client.query("/v1/scaling/policies", &out, q)
	if err != nil {
		return nil, nil, err
	}
	return out, qm, nil
}

// GetPolicy reads one scaling policy by ID.
func (s *Scaling) GetPolicy(id string, q *QueryOptions) (*ScalingPolicy, *QueryMeta, error) {
	if id == "" {
		return nil, nil, errors.New("missing scaling policy ID")
	}
	var out ScalingPolicy
	qm, err := s.client.query("/v1/scaling/policy/"+pathID(id), &out, q)
	if err != nil {
		return nil, nil, err
	}
	return &out, qm, nil
}
