package command

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/api"
)

// Relative times read like upstream's: the two largest units, no gaps.
func TestPrettyTimeDiff(t *testing.T) {
	now := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	cases := map[time.Duration]string{
		0:                      "0s ago",
		400 * time.Millisecond: "0s ago",
		3 * time.Second:        "3s ago",
		90 * time.Second:       "1m30s ago",
		time.Hour + 5*time.Minute + 3*time.Second: "1h5m ago",
		time.Hour + 3*time.Second:                 "1h ago",
		26 * time.Hour:                            "1d2h ago",
		-25 * time.Second:                         "25s from now",
	}
	for d, want := range cases {
		must.Eq(t, want, prettyTimeDiff(now.Add(-d), now), must.Sprintf("%v", d))
	}
	must.Eq(t, "", prettyTimeDiff(time.Time{}, now))
}

// A prefix picks the exact match first, then a unique prefix match; an
// ambiguous prefix returns every candidate for the user to choose from.
func TestPickByPrefix(t *testing.T) {
	ids := []string{"web", "web-canary", "worker"}
	id := func(s string) string { return s }

	got, ok, _ := pickByPrefix(ids, id, "web")
	must.True(t, ok)
	must.Eq(t, "web", got)

	got, ok, _ = pickByPrefix(ids, id, "wo")
	must.True(t, ok)
	must.Eq(t, "worker", got)

	_, ok, matches := pickByPrefix(ids, id, "w")
	must.False(t, ok)
	must.Eq(t, ids, matches)

	_, ok, matches = pickByPrefix(ids, id, "db")
	must.False(t, ok)
	must.SliceEmpty(t, matches)
}

// Placement failures are explained per group with upstream's wording,
// which operators grep for.
func TestFormatPlacementFailures(t *testing.T) {
	failed := map[string]*api.AllocationMetric{
		"web": {
			NodesEvaluated:     3,
			NodesAvailable:     map[string]int{"dc1": 3, "dc2": 0},
			ConstraintFiltered: map[string]int{"missing drivers": 2},
			NodesExhausted:     1,
			DimensionExhausted: map[string]int{"memory": 1},
			CoalescedFailures:  2,
		},
		"api": {NodesEvaluated: 0},
	}
	want := `Task Group "api" (failed to place 1 allocation):
  * No nodes were eligible for evaluation
Task Group "web" (failed to place 3 allocations):
  * No nodes are available in datacenter "dc2"
  * Constraint "missing drivers": 2 nodes excluded by filter
  * Resources exhausted on 1 nodes
  * Dimension "memory" exhausted on 1 nodes`
	must.Eq(t, want, formatPlacementFailures(failed, "", "  "))
}
