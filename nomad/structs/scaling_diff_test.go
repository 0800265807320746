package structs_test

import (
	"encoding/json"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// TestJob_Diff_Scaling checks that `job plan` shows a change of a group's
// scaling bounds and policy body, since they are part of the version.
func TestJob_Diff_Scaling(t *testing.T) {
	old := mock.Job()
	old.TaskGroups[0].Scaling = &structs.ScalingPolicy{Min: 1, Max: 5, Enabled: true,
		Policy: map[string]any{"cooldown": "1m", "check": []any{map[string]any{"cpu": []any{map[string]any{"query": "avg_cpu"}}}}}}
	next := old.Copy()
	next.TaskGroups[0].Scaling.Max = 8
	next.TaskGroups[0].Scaling.Policy["cooldown"] = "2m"
	d, err := old.Diff(next, false)
	must.NoError(t, err)
	must.Eq(t, "Edited", string(d.Type))
	must.Len(t, 1, d.TaskGroups)
	got := mustJSON(t, d.TaskGroups[0])
	must.StrContains(t, got, `"Name":"Max","Old":"5","New":"8"`)
	must.StrContains(t, got, `"Old":"1m","New":"2m"`)
}

// mustJSON renders v as JSON for substring checks.
func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	must.NoError(t, err)
	return string(b)
}
