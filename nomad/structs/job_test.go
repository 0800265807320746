package structs_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"pgregory.net/rapid"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// validationProblems runs Validate and returns its problems, failing if the
// error is not a ValidationError that is also ErrInvalidRequest (the HTTP
// layer relies on both to answer 400 with the list).
func validationProblems(t *testing.T, job *structs.Job) []string {
	t.Helper()
	err := job.Validate()
	if err == nil {
		return nil
	}
	must.ErrorIs(t, err, structs.ErrInvalidRequest)
	var verr *structs.ValidationError
	must.True(t, errors.As(err, &verr), must.Sprintf("Validate returned %T, not a ValidationError", err))
	return verr.Problems
}

// The mock job is the base every validation case changes one thing in; it
// must itself be valid or every case below passes for the wrong reason.
func TestJob_Validate_MockIsValid(t *testing.T) {
	must.NoError(t, mock.Job().Validate())
	must.NoError(t, mock.BatchJob().Validate())
}

// Each rule of Job.Validate, its group and task checks: one mistake gives
// exactly one problem whose text names where it is, and boundary values
// that are allowed stay allowed.
func TestJob_Validate_Rules(t *testing.T) {
	const g = "Task group web validation failed: "
	const tk = g + "Task web validation failed: "
	badConstraint := &structs.Constraint{LTarget: "${attr.a}", Operand: structs.ConstraintRegex}
	badAffinity := &structs.Affinity{LTarget: "${attr.a}", RTarget: "x", Operand: "=", Weight: 0}
	cases := []struct {
		name   string
		mutate func(j *structs.Job)
		want   []string
	}{
		// job
		{"missing ID", func(j *structs.Job) { j.ID = "" }, []string{"Missing job ID"}},
		{"ID of 128 characters", func(j *structs.Job) { j.ID = strings.Repeat("a", 128) }, nil},
		{"ID over 128 characters", func(j *structs.Job) { j.ID = strings.Repeat("a", 129) }, []string{"Job ID must be no more than 128 characters"}},
		{"missing name", func(j *structs.Job) { j.Name = "" }, []string{"Missing job name"}},
		{"missing type", func(j *structs.Job) { j.Type = "" }, []string{"Missing job type"}},
		{"unknown type", func(j *structs.Job) { j.Type = "daemon" }, []string{`Invalid job type "daemon": must be one of service, batch, system, sysbatch`}},
		{"batch type", func(j *structs.Job) { j.Type = structs.JobTypeBatch }, nil},
		{"system type", func(j *structs.Job) { j.Type = structs.JobTypeSystem; j.TaskGroups[0].Count = 1 }, nil},
		{"sysbatch type", func(j *structs.Job) { j.Type = structs.JobTypeSysBatch; j.TaskGroups[0].Count = 0 }, nil},
		{"system count above 1", func(j *structs.Job) { j.Type = structs.JobTypeSystem; j.TaskGroups[0].Count = 2 },
			[]string{g + "Task group count 2 can't exceed 1 for system jobs: they run one allocation per eligible node"}},
		{"priority 0", func(j *structs.Job) { j.Priority = 0 }, []string{"Job priority must be between [1, 100]"}},
		{"priority 101", func(j *structs.Job) { j.Priority = 101 }, []string{"Job priority must be between [1, 100]"}},
		{"priority 1", func(j *structs.Job) { j.Priority = structs.JobMinPriority }, nil},
		{"priority 100", func(j *structs.Job) { j.Priority = structs.JobMaxPriority }, nil},
		{"no datacenters", func(j *structs.Job) { j.Datacenters = nil }, []string{"Missing job datacenters"}},
		{"bad job constraint", func(j *structs.Job) {
			j.Constraints = []*structs.Constraint{{LTarget: "a", Operand: "="}, badConstraint}
		},
			[]string{`Constraint 2 validation failed: Operator "regexp" requires both an attribute and a value`}},
		{"bad job affinity", func(j *structs.Job) { j.Affinities = []*structs.Affinity{badAffinity} },
			[]string{"Affinity 1 validation failed: Affinity weight cannot be zero"}},
		{"no groups", func(j *structs.Job) { j.TaskGroups = nil }, []string{"Missing job task groups"}},
		{"unnamed group", func(j *structs.Job) {
			tg := j.TaskGroups[0].Copy()
			tg.Name = ""
			j.TaskGroups = append(j.TaskGroups, tg)
		}, []string{"Job task group 2 missing name"}},
		{"duplicate group", func(j *structs.Job) {
			j.TaskGroups = append(j.TaskGroups, j.TaskGroups[0].Copy())
		}, []string{"Job task group 2 redefines 'web' from group 1"}},
		// group
		{"negative count", func(j *structs.Job) { j.TaskGroups[0].Count = -1 }, []string{g + "Task group count can't be negative"}},
		{"zero count", func(j *structs.Job) { j.TaskGroups[0].Count = 0 }, nil},
		{"no tasks", func(j *structs.Job) { j.TaskGroups[0].Tasks = nil }, []string{g + "Missing tasks for task group"}},
		{"bad group constraint", func(j *structs.Job) { j.TaskGroups[0].Constraints = []*structs.Constraint{badConstraint} },
			[]string{g + `Constraint 1 validation failed: Operator "regexp" requires both an attribute and a value`}},
		{"bad group affinity", func(j *structs.Job) {
			j.TaskGroups[0].Affinities = []*structs.Affinity{{Operand: structs.ConstraintDistinctHosts, Weight: 10}}
		}, []string{g + `Affinity 1 validation failed: Affinity cannot use operator "distinct_hosts"`}},
		{"bad restart policy", func(j *structs.Job) { j.TaskGroups[0].RestartPolicy.Mode = "sometimes" },
			[]string{g + `Unsupported restart mode: "sometimes"`}},
		{"bad reschedule policy", func(j *structs.Job) { j.TaskGroups[0].ReschedulePolicy.DelayFunction = "linear" },
			[]string{g + `Invalid delay function "linear", must be one of ["constant" "exponential" "fibonacci"]`}},
		{"negative ephemeral disk", func(j *structs.Job) { j.TaskGroups[0].EphemeralDisk.SizeMB = -1 },
			[]string{g + "ephemeral_disk size can't be negative"}},
		{"unnamed task", func(j *structs.Job) {
			task := j.TaskGroups[0].Tasks[0].Copy()
			task.Name = ""
			j.TaskGroups[0].Tasks = append(j.TaskGroups[0].Tasks, task)
		}, []string{g + "Task 2 missing name"}},
		{"duplicate task", func(j *structs.Job) {
			j.TaskGroups[0].Tasks = append(j.TaskGroups[0].Tasks, j.TaskGroups[0].Tasks[0].Copy())
		}, []string{g + "Task 2 redefines 'web'"}},
		{"one leader", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Leader = true }, nil},
		{"two leaders", func(j *structs.Job) {
			side := j.TaskGroups[0].Tasks[0].Copy()
			side.Name = "side"
			j.TaskGroups[0].Tasks = append(j.TaskGroups[0].Tasks, side)
			for _, task := range j.TaskGroups[0].Tasks {
				task.Leader = true
			}
		}, []string{g + "Only one task may be marked as leader"}},
		{"update on batch", func(j *structs.Job) {
			j.Type = structs.JobTypeBatch
			j.TaskGroups[0].Update = structs.DefaultUpdateStrategy()
		}, []string{g + `Job type "batch" does not allow update block`}},
		{"update on sysbatch", func(j *structs.Job) {
			j.Type = structs.JobTypeSysBatch
			j.TaskGroups[0].Count = 1
			j.TaskGroups[0].Update = structs.DefaultUpdateStrategy()
		}, []string{g + `Job type "sysbatch" does not allow update block`}},
		{"named host network", func(j *structs.Job) {
			j.TaskGroups[0].Networks = []*structs.NetworkResource{{DynamicPorts: []structs.Port{{Label: "http", HostNetwork: "public"}}}}
		}, nil},
		{"negative group shutdown delay", func(j *structs.Job) { j.TaskGroups[0].ShutdownDelay = new(-time.Second) },
			[]string{g + "ShutdownDelay must be a positive value"}},
		{"render_templates", func(j *structs.Job) { j.TaskGroups[0].RestartPolicy.RenderTemplates = true },
			[]string{g + "restart render_templates is not supported by this version: a restart does not render the templates again"}},
		// task
		{"task disk", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Resources.DiskMB = 10 },
			[]string{tk + "Task can't ask for disk resources, they have to be specified at the task group level."}},
		{"negative task shutdown delay", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].ShutdownDelay = -time.Second },
			[]string{tk + "ShutdownDelay must be a positive value"}},
		{"missing driver", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Driver = "" }, []string{tk + "Missing task driver"}},
		{"negative kill timeout", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].KillTimeout = -time.Second },
			[]string{tk + "KillTimeout must be a positive value"}},
		{"missing resources", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Resources = nil }, []string{tk + "Missing task resources"}},
		{"too little memory", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Resources.MemoryMB = 5 },
			[]string{tk + "minimum MemoryMB value is 10; got 5"}},
		{"bad task constraint", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Constraints = []*structs.Constraint{badConstraint} },
			[]string{tk + `Constraint 1 validation failed: Operator "regexp" requires both an attribute and a value`}},
		{"bad task affinity", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Affinities = []*structs.Affinity{badAffinity} },
			[]string{tk + "Affinity 1 validation failed: Affinity weight cannot be zero"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := mock.Job()
			tc.mutate(job)
			must.Eq(t, tc.want, validationProblems(t, job))
		})
	}
}

// A job with many mistakes at every level gets all of them back at once,
// each naming its group and task, in one error: an operator on a slow link
// fixes the job file in one round trip instead of one per mistake.
func TestJob_Validate_ListsEveryProblem(t *testing.T) {
	job := mock.Job()
	job.Type = "daemon"
	job.Priority = 0
	job.Datacenters = nil

	web := job.TaskGroups[0]
	web.Count = -2
	web.Disconnect = &structs.DisconnectStrategy{LostAfter: time.Hour, StopOnClientAfter: ptr(time.Minute), Reconcile: "newest"}
	web.Tasks[0].Driver = ""
	web.Tasks[0].KillTimeout = -1
	web.Tasks[0].Resources = &structs.Resources{CPU: 0, MemoryMB: 1}

	db := mock.Job().TaskGroups[0]
	db.Name = "db"
	db.Tasks[0].Name = "postgres"
	db.MaxClientDisconnect = ptr(-time.Minute)
	db.EphemeralDisk.SizeMB = -5
	db.Tasks = append(db.Tasks, db.Tasks[0].Copy())
	job.TaskGroups = append(job.TaskGroups, db, db.Copy())

	must.Eq(t, []string{
		`Invalid job type "daemon": must be one of service, batch, system, sysbatch`,
		"Job priority must be between [1, 100]",
		"Missing job datacenters",
		"Task group web validation failed: Task group count can't be negative",
		"Task group web validation failed: disconnect.reconcile \"newest\" is not one of [best_score keep_original keep_replacement longest_running]",
		"Task group web validation failed: a lost window (max_client_disconnect / disconnect.lost_after) and a client stop (stop_after_client_disconnect / disconnect.stop_on_client_after) contradict each other; set only one",
		"Task group web validation failed: Task web validation failed: Missing task driver",
		"Task group web validation failed: Task web validation failed: KillTimeout must be a positive value",
		"Task group web validation failed: Task web validation failed: minimum CPU value is 1; got 0",
		"Task group web validation failed: Task web validation failed: minimum MemoryMB value is 10; got 1",
		"Task group db validation failed: ephemeral_disk size can't be negative",
		"Task group db validation failed: max_client_disconnect can't be negative",
		"Task group db validation failed: Task 2 redefines 'postgres'",
		"Job task group 3 redefines 'db' from group 2",
		"Task group db validation failed: ephemeral_disk size can't be negative",
		"Task group db validation failed: max_client_disconnect can't be negative",
		"Task group db validation failed: Task 2 redefines 'postgres'",
	}, validationProblems(t, job))

	text := job.Validate().Error()
	must.StrHasPrefix(t, "17 errors occurred:\n", text)
	must.Eq(t, 17, strings.Count(text, "\n\t* "), must.Sprint("one bullet per problem, none hidden inside another"))
}

// Canonicalize fills what the user left out, per job type, and keeps what
// they set: it runs before validation and before every stored job version.
func TestJob_Canonicalize_Defaults(t *testing.T) {
	job := &structs.Job{
		ID:   "edge",
		Type: structs.JobTypeBatch,
		TaskGroups: []*structs.TaskGroup{{
			Name:       "g",
			Disconnect: &structs.DisconnectStrategy{LostAfter: time.Hour},
			Tasks:      []*structs.Task{{Name: "t", Driver: "mock_driver", Resources: &structs.Resources{Cores: 2}}},
		}},
	}
	job.Canonicalize()

	must.Eq(t, structs.DefaultNamespace, job.Namespace)
	must.Eq(t, structs.DefaultRegion, job.Region)
	must.Eq(t, "edge", job.Name, must.Sprint("the name defaults to the ID"))
	must.Eq(t, structs.JobTypeBatch, job.Type, must.Sprint("a set type is kept"))
	must.Eq(t, structs.JobDefaultPriority, job.Priority)
	must.Eq(t, structs.DefaultNodePool, job.NodePool)
	must.Eq(t, []string{"*"}, job.Datacenters)

	tg := job.TaskGroups[0]
	must.Eq(t, structs.NewRestartPolicy(structs.JobTypeBatch), tg.RestartPolicy)
	must.Eq(t, structs.NewReschedulePolicy(structs.JobTypeBatch), tg.ReschedulePolicy)
	must.Eq(t, structs.DefaultEphemeralDisk(), tg.EphemeralDisk)
	must.Eq(t, structs.ReconcileOptionBestScore, tg.Disconnect.Reconcile)
	must.Eq(t, time.Hour, tg.Disconnect.LostAfter)

	task := tg.Tasks[0]
	must.Eq(t, &structs.Resources{Cores: 2, MemoryMB: structs.DefaultMemoryMB}, task.Resources,
		must.Sprint("a task asking for cores gets no default MHz on top"))
	must.Eq(t, structs.DefaultKillTimeout, task.KillTimeout)
	must.Eq(t, tg.RestartPolicy, task.RestartPolicy)
	must.False(t, task.RestartPolicy == tg.RestartPolicy, must.Sprint("the task gets its own copy of the group's policy"))
	must.NoError(t, job.Validate())

	system := &structs.Job{ID: "sys", Type: structs.JobTypeSystem, TaskGroups: []*structs.TaskGroup{{Name: "g"}}}
	system.Canonicalize()
	must.Nil(t, system.TaskGroups[0].ReschedulePolicy, must.Sprint("system jobs are never rescheduled"))
	must.Eq(t, structs.NewRestartPolicy(structs.JobTypeService), system.TaskGroups[0].RestartPolicy)

	var nilJob *structs.Job
	nilJob.Canonicalize() // must not panic
}

// genJob draws a job with any mix of fields left empty or set, the way
// jobs arrive from job files and the API.
func genJob(t *rapid.T) *structs.Job {
	maybe := func(label string, s string) string {
		if rapid.Bool().Draw(t, label) {
			return s
		}
		return ""
	}
	dur := rapid.SampledFrom([]time.Duration{0, time.Second, time.Minute, -time.Second})
	job := &structs.Job{
		ID:        rapid.StringMatching(`[a-z]{1,8}`).Draw(t, "id"),
		Name:      maybe("has name", "named"),
		Namespace: maybe("has ns", "fleet"),
		Region:    maybe("has region", "eu"),
		Type:      rapid.SampledFrom([]string{"", structs.JobTypeService, structs.JobTypeBatch, structs.JobTypeSystem, structs.JobTypeSysBatch}).Draw(t, "type"),
		Priority:  rapid.IntRange(0, 100).Draw(t, "priority"),
		NodePool:  maybe("has pool", "edge"),
	}
	if rapid.Bool().Draw(t, "has dcs") {
		job.Datacenters = []string{"dc1"}
	}
	for g := range rapid.IntRange(0, 3).Draw(t, "groups") {
		tg := &structs.TaskGroup{Name: string(rune('a' + g)), Count: rapid.IntRange(0, 3).Draw(t, "count")}
		if rapid.Bool().Draw(t, "has restart") {
			tg.RestartPolicy = &structs.RestartPolicy{Attempts: 1, Delay: dur.Draw(t, "delay"), Mode: structs.RestartPolicyModeDelay}
		}
		if rapid.Bool().Draw(t, "has reschedule") {
			tg.ReschedulePolicy = &structs.ReschedulePolicy{Attempts: 1, Interval: dur.Draw(t, "interval")}
		}
		if rapid.Bool().Draw(t, "has disk") {
			tg.EphemeralDisk = &structs.EphemeralDisk{SizeMB: rapid.IntRange(-1, 500).Draw(t, "disk")}
		}
		if rapid.Bool().Draw(t, "has disconnect") {
			tg.Disconnect = &structs.DisconnectStrategy{
				LostAfter: dur.Draw(t, "lost after"),
				Reconcile: rapid.SampledFrom(append([]string{""}, structs.ReconcileOptions...)).Draw(t, "reconcile"),
			}
		}
		for i := range rapid.IntRange(0, 3).Draw(t, "tasks") {
			task := &structs.Task{Name: string(rune('a' + i)), Driver: "mock_driver", KillTimeout: dur.Draw(t, "kill timeout")}
			if rapid.Bool().Draw(t, "has resources") {
				task.Resources = &structs.Resources{
					CPU:      rapid.IntRange(0, 500).Draw(t, "cpu"),
					Cores:    rapid.IntRange(0, 2).Draw(t, "cores"),
					MemoryMB: rapid.IntRange(0, 500).Draw(t, "memory"),
				}
			}
			if rapid.Bool().Draw(t, "has task restart") {
				task.RestartPolicy = &structs.RestartPolicy{Attempts: 5, Mode: structs.RestartPolicyModeFail}
			}
			tg.Tasks = append(tg.Tasks, task)
		}
		job.TaskGroups = append(job.TaskGroups, tg)
	}
	return job
}

// Property: Canonicalize is idempotent and only fills gaps. The servers
// canonicalize on registration and again on later paths (plan, scale,
// revert); a second pass that changed anything would create a spurious job
// version and an in-place update of every allocation.
func TestJob_Canonicalize_Idempotent(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		orig := genJob(t)
		once := orig.Copy()
		once.Canonicalize()
		twice := once.Copy()
		twice.Canonicalize()
		must.Eq(t, once, twice)

		if orig.Priority != 0 {
			must.Eq(t, orig.Priority, once.Priority)
		}
		if orig.Type != "" {
			must.Eq(t, orig.Type, once.Type)
		}
		for i, tg := range once.TaskGroups {
			must.NotNil(t, tg.RestartPolicy)
			must.NotNil(t, tg.EphemeralDisk)
			if o := orig.TaskGroups[i].EphemeralDisk; o != nil {
				must.Eq(t, o.SizeMB, tg.EphemeralDisk.SizeMB)
			}
			if tg.Disconnect != nil {
				must.SliceContains(t, structs.ReconcileOptions, tg.Disconnect.Reconcile)
			}
			for _, task := range tg.Tasks {
				must.NotNil(t, task.Resources)
				must.NotEq(t, 0, task.KillTimeout)
				must.NotNil(t, task.RestartPolicy)
			}
		}
	})
}

// Lookups and small helpers the scheduler and endpoints use on jobs.
func TestJob_Helpers(t *testing.T) {
	job := mock.Job()
	must.Eq(t, job.TaskGroups[0], job.LookupTaskGroup("web"))
	must.Nil(t, job.LookupTaskGroup("nope"))
	must.Nil(t, (*structs.Job)(nil).LookupTaskGroup("web"))
	must.Eq(t, job.TaskGroups[0].Tasks[0], job.TaskGroups[0].LookupTask("web"))
	must.Nil(t, job.TaskGroups[0].LookupTask("nope"))

	must.Eq(t, structs.NamespacedID{ID: job.ID, Namespace: job.Namespace}, job.NamespacedID())
	must.Eq(t, "default/"+job.ID, job.NamespacedID().String())

	must.True(t, (*structs.Job)(nil).Stopped(), must.Sprint("a missing job has nothing to run"))
	must.False(t, job.Stopped())
	job.Stop = true
	must.True(t, job.Stopped())

	summary := fullSummary()
	stub := job.Stub(summary)
	must.Eq(t, job.ID, stub.ID)
	must.Eq(t, job.Version, stub.Version)
	must.Eq(t, job.Stop, stub.Stop)
	must.Eq(t, summary, stub.JobSummary)
}

// A group's combined resources are what one allocation of it needs.
func TestTaskGroup_CombinedResources(t *testing.T) {
	tg := &structs.TaskGroup{
		EphemeralDisk: &structs.EphemeralDisk{SizeMB: 150},
		Tasks: []*structs.Task{
			{Resources: &structs.Resources{CPU: 100, MemoryMB: 64, MemoryMaxMB: 128, Cores: 1}},
			{Resources: &structs.Resources{CPU: 200, MemoryMB: 32}},
			{},
		},
	}
	must.Eq(t, &structs.Resources{CPU: 300, MemoryMB: 96, MemoryMaxMB: 128, Cores: 1, DiskMB: 150}, tg.CombinedResources())
}
