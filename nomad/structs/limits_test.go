package structs_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/helper/nesting"
	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// nestedConfig is a task config whose value nests depth levels in all
// (the config map itself is the first).
func nestedConfig(depth int) map[string]any {
	var v any = "leaf"
	for i := range depth - 1 {
		if i%2 == 0 {
			v = []any{v}
		} else {
			v = map[string]any{"a": v}
		}
	}
	return map[string]any{"run_for": "1s", "deep": v}
}

// The limit the API enforces on input is the limit validation enforces on
// stored jobs: a job accepted at one layer is never refused at the other.
func TestMaxNestingDepth_MatchesInputLimit(t *testing.T) {
	must.Eq(t, nesting.MaxDepth, structs.MaxNestingDepth)
}

// A job whose task config nests exactly to the limit validates and goes
// through the raft log in the deepest entry that carries it (a plan's
// allocations embed their job) and back unchanged, so a job that validates
// can always be applied and planned. One nested far deeper cannot be
// decoded at all, which is why validation must refuse it first.
func TestMaxNestingDepth_RoundTripsThroughRaft(t *testing.T) {
	job := mock.Job()
	job.TaskGroups[0].Tasks[0].Config = nestedConfig(structs.MaxNestingDepth)
	must.Eq(t, structs.MaxNestingDepth, structs.ValueDepth(job.TaskGroups[0].Tasks[0].Config, 1000))
	must.NoError(t, job.Validate())

	alloc := mock.Alloc()
	alloc.Job = job
	req := &structs.ApplyPlanResultsRequest{Job: job, AllocsUpdated: []*structs.Allocation{alloc}}
	buf, err := structs.Encode(structs.ApplyPlanResultsRequestType, req)
	must.NoError(t, err)
	var got structs.ApplyPlanResultsRequest
	must.NoError(t, structs.Decode(buf[1:], &got))
	// reflect rather than cmp: cmp's diff of nested lists is exponential.
	must.True(t, reflect.DeepEqual(job.TaskGroups[0].Tasks[0].Config, got.AllocsUpdated[0].Job.TaskGroups[0].Tasks[0].Config))

	job.TaskGroups[0].Tasks[0].Config = nestedConfig(1100)
	buf, err = structs.Encode(structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: job})
	must.NoError(t, err)
	must.ErrorContains(t, structs.Decode(buf[1:], &structs.JobRegisterRequest{}), "maximum decoding depth exceeded")
}

// Validation names each limit and where it was crossed.
func TestJob_Validate_Limits(t *testing.T) {
	const g = "Task group web validation failed: "
	const tk = g + "Task web validation failed: "
	cases := []struct {
		name   string
		mutate func(j *structs.Job)
		want   []string
	}{
		{"config at the nesting limit", func(j *structs.Job) {
			j.TaskGroups[0].Tasks[0].Config = nestedConfig(structs.MaxNestingDepth)
		}, nil},
		{"config over the nesting limit", func(j *structs.Job) {
			j.TaskGroups[0].Tasks[0].Config = nestedConfig(structs.MaxNestingDepth + 1)
		}, []string{tk + "Task config nests deeper than 64 levels"}},
		{"count at the maximum", func(j *structs.Job) { j.TaskGroups[0].Count = structs.MaxGroupCount }, nil},
		{"count of a billion", func(j *structs.Job) { j.TaskGroups[0].Count = 1_000_000_000 }, []string{
			g + "Task group count 1000000000 exceeds the maximum of 10000 instances per group",
		}},

		{"job ID with a space", func(j *structs.Job) { j.ID = "my job" }, []string{`Job ID "my job" must not contain a space`}},
		{"job ID with a slash", func(j *structs.Job) { j.ID = "a/b" }, nil},
		{"job ID with a backslash", func(j *structs.Job) { j.ID = `a\b` }, nil},
		{"job ID with a tab and a newline", func(j *structs.Job) { j.ID = "a\tb\nc" }, nil},
		{"job ID of 128 non-ASCII characters", func(j *structs.Job) { j.ID = strings.Repeat("é", 128) }, nil},
		{"job ID of 129 characters", func(j *structs.Job) { j.ID = strings.Repeat("x", 129) }, []string{"Job ID must be no more than 128 characters"}},
		{"job ID with NUL", func(j *structs.Job) { j.ID = "a\x00b" }, []string{`Job ID "a\x00b" must not contain a NUL character`}},
		{"job name with a space", func(j *structs.Job) { j.Name = "my job" }, nil},
		{"job name with a slash", func(j *structs.Job) { j.Name = "a/b" }, nil},
		{"job name with NUL", func(j *structs.Job) { j.Name = "a\x00b" }, []string{`Job name "a\x00b" must not contain a NUL character`}},
		{"group name with a backslash", func(j *structs.Job) { j.TaskGroups[0].Name = `..\x` }, []string{
			`Task group name "..\\x" must not contain "\\"`,
		}},
		{"task name escaping the alloc dir", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Name = "../../x" }, []string{
			g + `Task name "../../x" must not contain "/"`,
		}},
		{"task named ..", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Name = ".." }, []string{
			g + `Task name ".." is not allowed: it names a directory outside the task's own`,
		}},
		{"task named .", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Name = "." }, []string{
			g + `Task name "." is not allowed: it names a directory outside the task's own`,
		}},
		{"task named like the shared dir", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Name = "alloc" }, []string{
			g + `Task name "alloc" is not allowed: the allocation's shared directory has that name`,
		}},
		{"task name with dots", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Name = "web..v2" }, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := mock.Job()
			tc.mutate(job)
			got := validationProblems(t, job)
			for i := range got {
				got[i] = strings.TrimSpace(got[i])
			}
			must.Eq(t, tc.want, got)
		})
	}
}
