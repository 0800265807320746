package structs_test

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// TestScalingPolicy_Validate checks that a scaling block must have a max,
// a min no larger, and a count between them, each problem naming the
// field, since an autoscaler trusts these bounds.
func TestScalingPolicy_Validate(t *testing.T) {
	cases := []struct {
		name     string
		count    int
		min, max int64
		want     string
	}{
		{"valid", 3, 1, 5, ""},
		{"max missing", 3, 1, -1, "Task group web validation failed: Scaling policy invalid: max must be specified and non-negative"},
		{"min above max", 3, 6, 5, "Task group web validation failed: Scaling policy invalid: max (5) must not be less than min (6)"},
		{"count below min", 1, 2, 5, "Task group web validation failed: Scaling policy invalid: task group count (1) must not be less than min (2)"},
		{"count above max", 6, 1, 5, "Task group web validation failed: Scaling policy invalid: task group count (6) must not be greater than max (5)"},
		{"negative min", 0, -1, 5, "Task group web validation failed: Scaling policy invalid: min must be non-negative"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			job := mock.Job()
			job.TaskGroups[0].Count = c.count
			job.TaskGroups[0].Scaling = &structs.ScalingPolicy{Min: c.min, Max: c.max, Enabled: true}
			got := validationProblems(t, job)
			if c.want == "" {
				must.SliceEmpty(t, got)
				return
			}
			must.SliceContains(t, got, c.want)
		})
	}
}

// TestJob_SetScalingPolicies checks that a policy keeps its ID and
// CreateIndex across job versions, and its ModifyIndex while unchanged,
// since the autoscaler tracks policies by ID; a new policy's ID is a pure
// function of its target and index (the FSM must be deterministic).
func TestJob_SetScalingPolicies(t *testing.T) {
	v1 := mock.Job()
	v1.TaskGroups[0].Scaling = &structs.ScalingPolicy{Min: 1, Max: 5, Enabled: true, Policy: map[string]any{"cooldown": "1m"}}
	v1.SetScalingPolicies(nil, 10)
	p1 := v1.TaskGroups[0].Scaling
	must.NotEq(t, "", p1.ID)
	must.Eq(t, structs.ScalingPolicyTypeHorizontal, p1.Type)
	must.Eq(t, map[string]string{"Namespace": v1.Namespace, "Job": v1.ID, "Group": "web"}, p1.Target)
	must.Eq(t, 10, p1.CreateIndex)

	again := v1.Copy()
	again.TaskGroups[0].Scaling.ID = ""
	again.SetScalingPolicies(nil, 10)
	must.Eq(t, p1.ID, again.TaskGroups[0].Scaling.ID)

	same := v1.Copy()
	same.TaskGroups[0].Count = 4
	same.SetScalingPolicies(v1, 20)
	must.Eq(t, p1.ID, same.TaskGroups[0].Scaling.ID)
	must.Eq(t, 10, same.TaskGroups[0].Scaling.ModifyIndex)

	changed := v1.Copy()
	changed.TaskGroups[0].Scaling.Max = 8
	changed.SetScalingPolicies(v1, 30)
	must.Eq(t, p1.ID, changed.TaskGroups[0].Scaling.ID)
	must.Eq(t, 10, changed.TaskGroups[0].Scaling.CreateIndex)
	must.Eq(t, 30, changed.TaskGroups[0].Scaling.ModifyIndex)

	recreated := v1.Copy()
	recreated.SetScalingPolicies(nil, 40)
	must.NotEq(t, p1.ID, recreated.TaskGroups[0].Scaling.ID)
}

// TestScalingPolicy_CopyIsDeep checks that changing a copy's opaque policy
// body leaves the stored one alone (state store objects are immutable).
func TestScalingPolicy_CopyIsDeep(t *testing.T) {
	p := &structs.ScalingPolicy{Policy: map[string]any{"check": []any{map[string]any{"a": []any{map[string]any{"x": 1}}}}}}
	c := p.Copy()
	c.Policy["check"].([]any)[0].(map[string]any)["a"].([]any)[0].(map[string]any)["x"] = 2
	must.Eq(t, 1, p.Policy["check"].([]any)[0].(map[string]any)["a"].([]any)[0].(map[string]any)["x"])
}
