package structs

import (
	"testing"

	"github.com/shoenig/test/must"
)

// A job decoded with `null` where a group, task or constraint belongs is
// named entry by entry, so the request is refused before defaults or
// validation dereference the hole (a fuzzed RPC frame once crashed the
// server that way).
func TestNullElements(t *testing.T) {
	job := &Job{ID: "x", TaskGroups: []*TaskGroup{
		nil,
		{Name: "g", Tasks: []*Task{{Name: "t", Constraints: []*Constraint{nil}}, nil}},
	}, Meta: map[string]string{"a": "b"}}
	must.Eq(t, []string{
		"Job.TaskGroups[0] is null",
		"Job.TaskGroups[1].Tasks[0].Constraints[0] is null",
		"Job.TaskGroups[1].Tasks[1] is null",
	}, NullElements("Job", job))

	ok := &Job{ID: "x", TaskGroups: []*TaskGroup{{Name: "g", Tasks: []*Task{{Name: "t", Config: map[string]any{"v": nil}}}}}}
	must.SliceEmpty(t, NullElements("Job", ok), must.Sprint("a null value inside a free-form config is data, not a hole"))
}
