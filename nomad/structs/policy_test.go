package structs_test

import (
	"errors"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// problemsOf returns the problems of a validator's error (nil for none).
func problemsOf(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var verr *structs.ValidationError
	must.True(t, errors.As(err, &verr), must.Sprintf("got %T, not a ValidationError", err))
	must.ErrorIs(t, err, structs.ErrInvalidRequest)
	return verr.Problems
}

// Constraint operators each require the operands they read; an unknown
// operator is rejected at registration rather than silently never matching.
func TestConstraint_Validate(t *testing.T) {
	cases := []struct {
		c    structs.Constraint
		want []string
	}{
		{structs.Constraint{LTarget: "${attr.kernel.name}", RTarget: "linux", Operand: "="}, nil},
		{structs.Constraint{LTarget: "${attr.kernel.name}", RTarget: "linux"}, nil},
		{structs.Constraint{LTarget: "${attr.kernel.name}", Operand: "!="}, nil},
		{structs.Constraint{RTarget: "linux", Operand: "=="}, []string{"No LTarget provided but is required by constraint"}},
		{structs.Constraint{RTarget: "3", Operand: ">="}, []string{"No LTarget provided but is required by constraint"}},
		{structs.Constraint{LTarget: "${attr.a}", RTarget: "^x", Operand: structs.ConstraintRegex}, nil},
		{structs.Constraint{LTarget: "${attr.a}", Operand: structs.ConstraintVersion}, []string{`Operator "version" requires both an attribute and a value`}},
		{structs.Constraint{RTarget: ">= 1.0", Operand: structs.ConstraintSemver}, []string{`Operator "semver" requires both an attribute and a value`}},
		{structs.Constraint{LTarget: "${attr.a}", Operand: structs.ConstraintSetContainsAny}, []string{`Operator "set_contains_any" requires both an attribute and a value`}},
		{structs.Constraint{LTarget: "${attr.a}", Operand: structs.ConstraintAttributeIsSet}, nil},
		{structs.Constraint{Operand: structs.ConstraintAttributeIsNotSet}, []string{`Operator "is_not_set" requires an attribute`}},
		{structs.Constraint{Operand: structs.ConstraintDistinctHosts}, nil},
		{structs.Constraint{LTarget: "${meta.rack}", Operand: structs.ConstraintDistinctProperty}, nil},
		{structs.Constraint{LTarget: "a", RTarget: "b", Operand: "near"}, []string{`Unknown constraint type "near"`}},
	}
	for _, tc := range cases {
		must.Eq(t, tc.want, problemsOf(t, tc.c.Validate()), must.Sprintf("constraint %s", tc.c.String()))
	}
}

// Affinity weights are non-zero and within [-100, 100], and affinities
// cannot use the distinct_* operators (those are placement rules, not
// preferences); several mistakes are reported together.
func TestAffinity_Validate(t *testing.T) {
	ok := structs.Affinity{LTarget: "${meta.site}", RTarget: "tower", Operand: "=", Weight: 50}
	with := func(f func(a *structs.Affinity)) structs.Affinity { a := ok; f(&a); return a }
	cases := []struct {
		name string
		a    structs.Affinity
		want []string
	}{
		{"valid", ok, nil},
		{"negative weight", with(func(a *structs.Affinity) { a.Weight = -100 }), nil},
		{"weight 100", with(func(a *structs.Affinity) { a.Weight = 100 }), nil},
		{"zero weight", with(func(a *structs.Affinity) { a.Weight = 0 }), []string{"Affinity weight cannot be zero"}},
		{"weight 101", with(func(a *structs.Affinity) { a.Weight = 101 }), []string{"Affinity weight must be within the range [-100,100]"}},
		{"weight -101", with(func(a *structs.Affinity) { a.Weight = -101 }), []string{"Affinity weight must be within the range [-100,100]"}},
		{"distinct_hosts", with(func(a *structs.Affinity) { a.Operand = structs.ConstraintDistinctHosts }),
			[]string{`Affinity cannot use operator "distinct_hosts"`}},
		{"distinct_property", with(func(a *structs.Affinity) { a.Operand = structs.ConstraintDistinctProperty }),
			[]string{`Affinity cannot use operator "distinct_property"`}},
		{"bad constraint part", with(func(a *structs.Affinity) { a.Operand = structs.ConstraintRegex; a.RTarget = "" }),
			[]string{`Operator "regexp" requires both an attribute and a value`}},
		{"several mistakes", structs.Affinity{Operand: "near"},
			[]string{"Affinity weight cannot be zero", `Unknown constraint type "near"`}},
	}
	for _, tc := range cases {
		must.Eq(t, tc.want, problemsOf(t, tc.a.Validate()), must.Sprint(tc.name))
	}
}

// A restart policy must have a known mode, no negative values, and room in
// its interval for its attempts; the defaults for every job type pass.
func TestRestartPolicy_Validate(t *testing.T) {
	cases := []struct {
		name string
		r    structs.RestartPolicy
		want []string
	}{
		{"delay mode", structs.RestartPolicy{Attempts: 2, Interval: time.Minute, Delay: time.Second, Mode: structs.RestartPolicyModeDelay}, nil},
		{"no attempts", structs.RestartPolicy{Mode: structs.RestartPolicyModeFail}, nil},
		{"exactly fits", structs.RestartPolicy{Attempts: 4, Interval: time.Minute, Delay: 15 * time.Second, Mode: "fail"}, nil},
		{"unknown mode", structs.RestartPolicy{Mode: "sometimes"}, []string{`Unsupported restart mode: "sometimes"`}},
		{"missing mode", structs.RestartPolicy{}, []string{`Unsupported restart mode: ""`}},
		{"negative attempts", structs.RestartPolicy{Attempts: -1, Mode: "fail"}, []string{"Restart attempts can't be negative"}},
		{"negative delay", structs.RestartPolicy{Delay: -1, Mode: "fail"}, []string{"Restart delay can't be negative"}},
		{"negative interval", structs.RestartPolicy{Interval: -1, Mode: "fail"}, []string{"Restart interval can't be negative"}},
		{"attempts do not fit", structs.RestartPolicy{Attempts: 5, Interval: time.Minute, Delay: 15 * time.Second, Mode: "fail"},
			[]string{"Nomad can't restart the TaskGroup 5 times in an interval of 1m0s with a delay of 15s"}},
		{"several mistakes", structs.RestartPolicy{Attempts: -1, Delay: -1, Interval: -1, Mode: "x"}, []string{
			`Unsupported restart mode: "x"`, "Restart attempts can't be negative",
			"Restart delay can't be negative", "Restart interval can't be negative",
		}},
	}
	for _, tc := range cases {
		must.Eq(t, tc.want, problemsOf(t, tc.r.Validate()), must.Sprint(tc.name))
	}
	for _, typ := range []string{structs.JobTypeService, structs.JobTypeBatch, structs.JobTypeSystem, structs.JobTypeSysBatch} {
		must.NoError(t, structs.NewRestartPolicy(typ).Validate(), must.Sprintf("default for %s", typ))
	}
}

// A reschedule policy has no negative values, a known delay function
// (listed in the error), and not both unlimited and a count of attempts.
func TestReschedulePolicy_Validate(t *testing.T) {
	cases := []struct {
		name string
		r    structs.ReschedulePolicy
		want []string
	}{
		{"empty", structs.ReschedulePolicy{}, nil},
		{"constant", structs.ReschedulePolicy{Attempts: 1, Interval: time.Hour, DelayFunction: structs.DelayFunctionConstant}, nil},
		{"unlimited", structs.ReschedulePolicy{Unlimited: true, DelayFunction: structs.DelayFunctionFibonacci}, nil},
		{"negative attempts", structs.ReschedulePolicy{Attempts: -1}, []string{"Reschedule policy durations and attempts can't be negative"}},
		{"negative interval", structs.ReschedulePolicy{Interval: -1}, []string{"Reschedule policy durations and attempts can't be negative"}},
		{"negative delay", structs.ReschedulePolicy{Delay: -1}, []string{"Reschedule policy durations and attempts can't be negative"}},
		{"negative max delay", structs.ReschedulePolicy{MaxDelay: -1}, []string{"Reschedule policy durations and attempts can't be negative"}},
		{"unknown delay function", structs.ReschedulePolicy{DelayFunction: "linear"},
			[]string{`Invalid delay function "linear", must be one of ["constant" "exponential" "fibonacci"]`}},
		{"unlimited with attempts", structs.ReschedulePolicy{Unlimited: true, Attempts: 3},
			[]string{"Reschedule policy can't have both unlimited and a number of attempts"}},
	}
	for _, tc := range cases {
		must.Eq(t, tc.want, problemsOf(t, tc.r.Validate()), must.Sprint(tc.name))
	}
	for _, typ := range []string{structs.JobTypeService, structs.JobTypeBatch} {
		must.NoError(t, structs.NewReschedulePolicy(typ).Validate(), must.Sprintf("default for %s", typ))
	}
	must.Nil(t, structs.NewReschedulePolicy(structs.JobTypeSystem))
	must.Nil(t, structs.NewReschedulePolicy(structs.JobTypeSysBatch))
}

// Enabled decides whether a failed or lost allocation may be replaced at
// all; attempts = 0 must really mean "never"
// (see docs/concepts/disconnected-clients.md, "Replacement while unknown").
func TestReschedulePolicy_Enabled(t *testing.T) {
	must.False(t, (*structs.ReschedulePolicy)(nil).Enabled())
	must.False(t, (&structs.ReschedulePolicy{}).Enabled())
	must.False(t, (&structs.ReschedulePolicy{Attempts: 0, Interval: time.Hour}).Enabled())
	must.False(t, (&structs.ReschedulePolicy{Attempts: 2}).Enabled(), must.Sprint("attempts without an interval"))
	must.True(t, (&structs.ReschedulePolicy{Attempts: 2, Interval: time.Hour}).Enabled())
	must.True(t, (&structs.ReschedulePolicy{Unlimited: true}).Enabled())
	must.True(t, structs.NewReschedulePolicy(structs.JobTypeService).Enabled())
	must.True(t, structs.NewReschedulePolicy(structs.JobTypeBatch).Enabled())
}

// Task resources have minimums; a task may ask for whole cores instead of
// MHz, and a memory ceiling below the reservation is a mistake.
func TestResources_Validate(t *testing.T) {
	cases := []struct {
		name string
		r    structs.Resources
		want []string
	}{
		{"defaults", *structs.DefaultResources(), nil},
		{"minimums", structs.Resources{CPU: structs.MinCPU, MemoryMB: structs.MinMemoryMB}, nil},
		{"cores instead of MHz", structs.Resources{Cores: 2, MemoryMB: 64}, nil},
		{"memory ceiling", structs.Resources{CPU: 100, MemoryMB: 64, MemoryMaxMB: 128}, nil},
		{"negative cores", structs.Resources{CPU: 100, Cores: -1, MemoryMB: 64}, []string{"Cores can't be negative"}},
		{"too little CPU", structs.Resources{CPU: 0, MemoryMB: 64}, []string{"minimum CPU value is 1; got 0"}},
		{"too little memory", structs.Resources{CPU: 100, MemoryMB: 9}, []string{"minimum MemoryMB value is 10; got 9"}},
		{"ceiling below reservation", structs.Resources{CPU: 100, MemoryMB: 64, MemoryMaxMB: 32},
			[]string{"MemoryMaxMB value (32) should be larger than MemoryMB value (64)"}},
	}
	for _, tc := range cases {
		must.Eq(t, tc.want, problemsOf(t, tc.r.Validate()), must.Sprint(tc.name))
	}
}

// Canonicalize fills CPU only when the task asked for neither MHz nor
// cores, and memory only when unset.
func TestResources_Canonicalize(t *testing.T) {
	r := &structs.Resources{}
	r.Canonicalize()
	must.Eq(t, &structs.Resources{CPU: structs.DefaultCPU, MemoryMB: structs.DefaultMemoryMB}, r)

	r = &structs.Resources{Cores: 1, MemoryMB: 64}
	r.Canonicalize()
	must.Eq(t, &structs.Resources{Cores: 1, MemoryMB: 64}, r)

	must.Eq(t, "cpu=100 memory=300MB disk=0MB", structs.DefaultResources().String())
	must.Eq(t, &structs.EphemeralDisk{SizeMB: 300}, structs.DefaultEphemeralDisk())
}
