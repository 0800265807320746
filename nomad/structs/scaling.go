package structs

import (
	"crypto/sha256"
	"fmt"
	"maps"
	"reflect"
)

// ScalingPolicyTypeHorizontal is the type of a group's scaling policy: it
// changes the group's count. It is the only type a job can carry here
// (upstream's vertical types belong to task-level blocks of its
// Enterprise edition, which the job file parser refuses).
const ScalingPolicyTypeHorizontal = "horizontal"

// Keys of a scaling policy's Target, as upstream.
const (
	ScalingTargetNamespace = "Namespace"
	ScalingTargetJob       = "Job"
	// ScalingTargetGroup is also the key of a scale request's Target.
	ScalingTargetGroup = "Group"
)

// ScalingPolicy is a group's `scaling` block. The servers use Min, Max
// and Enabled (a scale request outside Min..Max is refused); Policy is the
// autoscaler's, stored and returned as given. The policy lives in its
// group, so it is versioned with the job; ID, Target and the indexes are
// set by the state store when the job is written (see
// Job.SetScalingPolicies).
type ScalingPolicy struct {
	ID      string
	Type    string
	Target  map[string]string
	Policy  map[string]any
	Min     int64
	Max     int64
	Enabled bool

	CreateIndex uint64
	ModifyIndex uint64
}

// Copy returns a deep copy; Policy's nested lists and maps are copied too.
func (p *ScalingPolicy) Copy() *ScalingPolicy {
	if p == nil {
		return nil
	}
	n := *p
	n.Target = maps.Clone(p.Target)
	if p.Policy != nil {
		n.Policy, _ = copyOpaque(p.Policy).(map[string]any)
	}
	return &n
}

// copyOpaque deep-copies a decoded free-form value (maps and lists of
// scalars).
func copyOpaque(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = copyOpaque(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = copyOpaque(e)
		}
		return out
	case []map[string]any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = copyOpaque(e)
		}
		return out
	default:
		return v
	}
}

// Namespace, JobID and Group read the policy's Target.
func (p *ScalingPolicy) Namespace() string { return p.Target[ScalingTargetNamespace] }

// JobID is the job the policy scales.
func (p *ScalingPolicy) JobID() string { return p.Target[ScalingTargetJob] }

// Group is the task group the policy scales.
func (p *ScalingPolicy) Group() string { return p.Target[ScalingTargetGroup] }

// validate checks the policy of tg, naming each field as the job file
// spells it. Upstream's words where it has them.
func (p *ScalingPolicy) validate(tg *TaskGroup) []string {
	var out problems
	switch p.Type {
	case ScalingPolicyTypeHorizontal, "":
	default:
		out.add("Scaling policy invalid: type %q is not supported; a group's scaling block is %q", p.Type, ScalingPolicyTypeHorizontal)
	}
	if p.Max < 0 {
		out.add("Scaling policy invalid: max must be specified and non-negative")
	}
	if p.Min < 0 {
		out.add("Scaling policy invalid: min must be non-negative")
	}
	if p.Max >= 0 && p.Min > p.Max {
		out.add("Scaling policy invalid: max (%d) must not be less than min (%d)", p.Max, p.Min)
	}
	if p.Max > MaxGroupCount {
		out.add("Scaling policy invalid: max (%d) exceeds the maximum of %d instances per group", p.Max, MaxGroupCount)
	}
	if p.Min >= 0 && p.Max >= p.Min {
		if c := int64(tg.Count); c < p.Min {
			out.add("Scaling policy invalid: task group count (%d) must not be less than min (%d)", c, p.Min)
		} else if c > p.Max {
			out.add("Scaling policy invalid: task group count (%d) must not be greater than max (%d)", c, p.Max)
		}
	}
	return out
}

// Stub returns the list form of the policy.
func (p *ScalingPolicy) Stub() *ScalingPolicyListStub {
	return &ScalingPolicyListStub{
		ID: p.ID, Enabled: p.Enabled, Type: p.Type, Target: maps.Clone(p.Target),
		CreateIndex: p.CreateIndex, ModifyIndex: p.ModifyIndex,
	}
}

// ScalingPolicyListStub is the list form of a scaling policy.
type ScalingPolicyListStub struct {
	ID          string
	Enabled     bool
	Type        string
	Target      map[string]string
	CreateIndex uint64
	ModifyIndex uint64
}

// ScalingPolicies returns the job's group policies, in group order.
func (j *Job) ScalingPolicies() []*ScalingPolicy {
	var out []*ScalingPolicy
	for _, tg := range j.TaskGroups {
		if tg.Scaling != nil {
			out = append(out, tg.Scaling)
		}
	}
	return out
}

// SetScalingPolicies fills the server-owned fields of the job's group
// policies as the job is written at index: Type defaults to horizontal,
// Target names the group, and a policy the previous version (prev, nil for
// a new job) already had for the same group keeps its ID and CreateIndex,
// and its ModifyIndex unless it changed. A new policy's ID is derived from
// its target and index, so every server computes the same one (the state
// store runs inside the FSM).
func (j *Job) SetScalingPolicies(prev *Job, index uint64) {
	for _, tg := range j.TaskGroups {
		p := tg.Scaling
		if p == nil {
			continue
		}
		if p.Type == "" {
			p.Type = ScalingPolicyTypeHorizontal
		}
		p.Target = map[string]string{
			ScalingTargetNamespace: j.Namespace, ScalingTargetJob: j.ID, ScalingTargetGroup: tg.Name,
		}
		var old *ScalingPolicy
		if prev != nil {
			if g := prev.LookupTaskGroup(tg.Name); g != nil && g.Scaling != nil && g.Scaling.Type == p.Type {
				old = g.Scaling
			}
		}
		if old == nil {
			p.ID = scalingPolicyID(p.Target, p.Type, index)
			p.CreateIndex, p.ModifyIndex = index, index
			continue
		}
		p.ID, p.CreateIndex = old.ID, old.CreateIndex
		if scalingPolicyChanged(old, p) {
			p.ModifyIndex = index
		} else {
			p.ModifyIndex = old.ModifyIndex
		}
	}
}

// scalingPolicyChanged reports whether b differs from a in what the job
// file sets.
func scalingPolicyChanged(a, b *ScalingPolicy) bool {
	ac, bc := *a, *b
	ac.ID, bc.ID = "", ""
	ac.CreateIndex, ac.ModifyIndex, bc.CreateIndex, bc.ModifyIndex = 0, 0, 0, 0
	return !reflect.DeepEqual(&ac, &bc)
}

// scalingPolicyID is a UUID-shaped digest of a policy's target, type and
// creation index: unique per policy incarnation and the same on every
// server.
func scalingPolicyID(target map[string]string, typ string, index uint64) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%s\x00%s\x00%d",
		target[ScalingTargetNamespace], target[ScalingTargetJob], target[ScalingTargetGroup], typ, index))
	return fmt.Sprintf("%x-%x-%x-%x-%x", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16])
}

// ScalingPolicyListRequest lists scaling policies; Job and Type, when set,
// keep only the policies of that job and of that type.
type ScalingPolicyListRequest struct {
	Job  string
	Type string
	QueryOptions
}

// ScalingPolicyListResponse answers Scaling.ListPolicies.
type ScalingPolicyListResponse struct {
	Policies []*ScalingPolicyListStub
	QueryMeta
}

// ScalingPolicySpecificRequest reads one scaling policy.
type ScalingPolicySpecificRequest struct {
	ID string
	QueryOptions
}

// SingleScalingPolicyResponse answers Scaling.GetPolicy; Policy is nil
// when there is none.
type SingleScalingPolicyResponse struct {
	Policy *ScalingPolicy
	QueryMeta
}

// CheckCount refuses a scale request's count outside the policy's bounds,
// in upstream's words. PolicyOverride does not lift it (nor does it
// upstream): the bounds are part of the job, and a count outside them
// would make a job version that fails validation. A nil policy bounds
// nothing.
func (p *ScalingPolicy) CheckCount(count int64) error {
	switch {
	case p == nil:
		return nil
	case count < p.Min:
		return fmt.Errorf("%w: group count was less than scaling policy minimum: %d < %d", ErrInvalidRequest, count, p.Min)
	case count > p.Max:
		return fmt.Errorf("%w: group count was greater than scaling policy maximum: %d > %d", ErrInvalidRequest, count, p.Max)
	}
	return nil
}

// ErrScalingUnstable refuses a count change that an autoscaler derived
// from a group's Running count while that count misstates the group:
// allocations are unknown (their node is disconnected, they may well be
// running) or a reconnect is unresolved (the group briefly runs more than
// its count). It is a 400 like ErrScalingBlocked; PolicyOverride goes
// past it.
var ErrScalingUnstable error = &refusal{msg: "job scaling blocked while allocations are disconnected or reconnecting", kind: ErrInvalidRequest}

// UnstableReason says why the group's Running count misstates it, or ""
// when it does not. It is what /v1/job/:id/scale reports as Unstable.
func (g *TaskGroupScaleStatus) UnstableReason() string {
	switch {
	case g.Unknown > 0 && g.Reconnecting > 0:
		return fmt.Sprintf("%s unknown (node disconnected) and %d reconnecting: Running undercounts the group and may exceed its count once they are back", allocations(g.Unknown), g.Reconnecting)
	case g.Unknown > 0:
		return fmt.Sprintf("%s unknown (node disconnected): Running undercounts the group until they reconnect or are lost", allocations(g.Unknown))
	case g.Reconnecting > 0:
		return fmt.Sprintf("%s reconnecting: the group may run more than its count until the servers resolve the reconnect", allocations(g.Reconnecting))
	}
	return ""
}

// allocations is "1 allocation" or "n allocations".
func allocations(n int) string {
	if n == 1 {
		return "1 allocation"
	}
	return fmt.Sprintf("%d allocations", n)
}

// CheckScale refuses a new count for the group, as it stands, that an
// autoscaler reading Running would ask for wrongly: a lower count while
// allocations are unknown or reconnecting (Running leaves the unknown ones
// out), and a higher one while a reconnect is unresolved and Running
// exceeds the count (a "scale in" computed from Running would raise it).
// Raising the count while allocations are unknown stays allowed: the load
// on the reachable ones is real.
func (g *TaskGroupScaleStatus) CheckScale(count int64) error {
	desired := int64(g.Desired)
	switch {
	case count < desired && (g.Unknown > 0 || g.Reconnecting > 0):
		return fmt.Errorf("%w: group count %d would lower %d while %s; retry once they are resolved, or set PolicyOverride",
			ErrScalingUnstable, count, desired, g.UnstableReason())
	case count > desired && g.Reconnecting > 0 && g.Running > g.Desired:
		return fmt.Errorf("%w: group count %d would raise %d while %s (Running %d); retry once it is resolved, or set PolicyOverride",
			ErrScalingUnstable, count, desired, g.UnstableReason(), g.Running)
	}
	return nil
}
