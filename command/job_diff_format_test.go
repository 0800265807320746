package command

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/api"
)

// The plan diff reads as upstream's: a marker per change, groups with the
// scheduler's counts, tasks with what they force, objects in braces, and
// unchanged lines of the job, groups and tasks only with -verbose (inside
// an object, whatever the servers sent).
func TestFormatJobDiff(t *testing.T) {
	d := &api.JobDiff{Type: "Edited", ID: "web",
		Fields: []*api.FieldDiff{{Type: "None", Name: "Priority", Old: "50", New: "50"}},
		TaskGroups: []*api.TaskGroupDiff{{
			Type: "Edited", Name: "web",
			Updates: map[string]uint64{"create": 1, "create/destroy update": 2},
			Fields:  []*api.FieldDiff{{Type: "Edited", Name: "Count", Old: "2", New: "3", Annotations: []string{"forces create"}}},
			Tasks: []*api.TaskDiff{{
				Type: "Edited", Name: "srv", Annotations: []string{"forces create/destroy update"},
				Objects: []*api.ObjectDiff{{Type: "Edited", Name: "Config", Fields: []*api.FieldDiff{
					{Type: "Edited", Name: "image", Old: "redis:7", New: "redis:8"},
					{Type: "Added", Name: "args[0]", New: "-v"},
					{Type: "None", Name: "port", Old: "6379", New: "6379"},
				}}},
			}},
		}},
	}
	want := `+/- Job: "web"
+/- Task Group: "web" (1 create, 2 create/destroy update)
  +/- Count: "2" => "3" (forces create)
  +/- Task: "srv" (forces create/destroy update)
    +/- Config {
      +/- image: "redis:7" => "redis:8"
      + args[0]: "-v"
        port: "6379"
    }`
	must.Eq(t, want, formatJobDiff(d, false))

	verbose := formatJobDiff(d, true)
	must.StrContains(t, verbose, "\n    Priority: \"50\"\n")
	must.StrContains(t, verbose, "\n        port: \"6379\"\n")
}

// A plan changes allocations when it places, stops, migrates or replaces
// them; in-place updates and ignores alone are no change (exit 0).
func TestPlanExitCode(t *testing.T) {
	resp := func(u api.DesiredUpdates) *api.JobPlanResponse {
		return &api.JobPlanResponse{Annotations: &api.PlanAnnotations{DesiredTGUpdates: map[string]*api.DesiredUpdates{"web": &u}}}
	}
	must.Eq(t, planNoChanges, planExitCode(resp(api.DesiredUpdates{Ignore: 3, InPlaceUpdate: 1})))
	must.Eq(t, planChanges, planExitCode(resp(api.DesiredUpdates{Place: 1})))
	must.Eq(t, planChanges, planExitCode(resp(api.DesiredUpdates{Stop: 1})))
	must.Eq(t, planChanges, planExitCode(resp(api.DesiredUpdates{DestructiveUpdate: 1})))
	must.Eq(t, planNoChanges, planExitCode(&api.JobPlanResponse{}))
}
