package structs

import (
	"testing"

	"github.com/shoenig/test/must"
)

func diffJob() *Job {
	job := &Job{
		ID: "web", Name: "web", Type: JobTypeService, Datacenters: []string{"dc1"},
		Meta: map[string]string{"owner": "ops"},
		TaskGroups: []*TaskGroup{{
			Name: "web", Count: 1,
			Tasks: []*Task{{
				Name: "srv", Driver: "raw_exec",
				Config:    map[string]any{"command": "/bin/sleep", "args": []any{"60"}},
				Resources: &Resources{CPU: 100, MemoryMB: 64},
			}},
		}},
	}
	job.Canonicalize()
	return job
}

func findField(fields []*FieldDiff, name string) *FieldDiff {
	for _, f := range fields {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// An edit deep in a task shows as an edited job, group, task and object
// with the old and new value, which is what `job plan` prints as +/-.
func TestJobDiff_EditedTaskConfig(t *testing.T) {
	old, new := diffJob(), diffJob()
	new.TaskGroups[0].Count = 3
	new.TaskGroups[0].Tasks[0].Config["args"] = []any{"120"}
	new.Version, new.ModifyIndex = 7, 99 // server-owned, never a change

	d, err := old.Diff(new, false)
	must.NoError(t, err)
	must.Eq(t, DiffTypeEdited, d.Type)
	must.SliceEmpty(t, d.Fields)
	must.Len(t, 1, d.TaskGroups)
	g := d.TaskGroups[0]
	must.Eq(t, DiffTypeEdited, g.Type)
	must.Eq(t, &FieldDiff{Type: DiffTypeEdited, Name: "Count", Old: "1", New: "3"}, findField(g.Fields, "Count"))
	must.Len(t, 1, g.Tasks)
	must.Eq(t, DiffTypeEdited, g.Tasks[0].Type)
	must.Len(t, 1, g.Tasks[0].Objects)
	cfg := g.Tasks[0].Objects[0]
	must.Eq(t, "Config", cfg.Name)
	must.Eq(t, []*FieldDiff{{Type: DiffTypeEdited, Name: "args[0]", Old: "60", New: "120"}}, cfg.Fields)
}

// Identical jobs differ in nothing; contextual diffs still list the
// unchanged fields for -verbose.
func TestJobDiff_NoChange(t *testing.T) {
	d, err := diffJob().Diff(diffJob(), false)
	must.NoError(t, err)
	must.Eq(t, DiffTypeNone, d.Type)
	must.SliceEmpty(t, d.TaskGroups)

	d, err = diffJob().Diff(diffJob(), true)
	must.NoError(t, err)
	must.Eq(t, DiffTypeNone, d.Type)
	must.Eq(t, &FieldDiff{Type: DiffTypeNone, Name: "Name", Old: "web", New: "web"}, findField(d.Fields, "Name"))
	must.Len(t, 1, d.TaskGroups)
}

// A job not registered yet is all additions; a new group and a removed
// group are added and deleted; meta keys and datacenters are per entry.
func TestJobDiff_AddedAndDeleted(t *testing.T) {
	d, err := (*Job)(nil).Diff(diffJob(), false)
	must.NoError(t, err)
	must.Eq(t, DiffTypeAdded, d.Type)
	must.Eq(t, DiffTypeAdded, d.TaskGroups[0].Type)

	old, new := diffJob(), diffJob()
	new.TaskGroups[0].Name = "api"
	new.Meta = map[string]string{"team": "edge"}
	new.Datacenters = []string{"dc1", "dc2"}
	d, err = old.Diff(new, false)
	must.NoError(t, err)
	must.Len(t, 2, d.TaskGroups)
	must.Eq(t, "api", d.TaskGroups[0].Name)
	must.Eq(t, DiffTypeAdded, d.TaskGroups[0].Type)
	must.Eq(t, DiffTypeDeleted, d.TaskGroups[1].Type)
	must.Eq(t, DiffTypeDeleted, findField(d.Fields, "Meta[owner]").Type)
	must.Eq(t, DiffTypeAdded, findField(d.Fields, "Meta[team]").Type)
	must.Len(t, 1, d.Objects)
	must.Eq(t, []*FieldDiff{{Type: DiffTypeAdded, Name: "Datacenters", New: "dc2"}}, d.Objects[0].Fields)

	_, err = old.Diff(&Job{ID: "other"}, false)
	must.ErrorIs(t, err, ErrDiffMismatch)
}
