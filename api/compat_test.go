package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/api"
)

// These tests prove wire compatibility against the official client library:
// our JSON must decode into its types with no unknown field and no type
// mismatch, and come back unchanged. If they fail, `nomad` tooling pointed
// at our agent breaks.

// fixedTime has no monotonic reading and a UTC location, so it survives a
// JSON round trip unchanged.
var fixedTime = time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)

// fill sets every field reachable from v (a pointer) to a non-zero value,
// so a round trip that loses or retypes any field shows up as a diff. depth
// bounds recursion through self-referencing types.
func fill(v reflect.Value, depth int) {
	if depth > 8 {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		fill(v.Elem(), depth+1)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(fixedTime))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), depth+1)
			}
		}
	case reflect.String:
		v.SetString("s")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if v.Type() == reflect.TypeFor[time.Duration]() {
			v.SetInt(int64(3 * time.Second))
			return
		}
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), depth+1)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		key := reflect.New(v.Type().Key()).Elem()
		fill(key, depth+1)
		val := reflect.New(v.Type().Elem()).Elem()
		fill(val, depth+1)
		m.SetMapIndex(key, val)
		v.Set(m)
	case reflect.Interface:
		// Free-form values (driver config) travel as JSON; use a type that
		// decodes back to itself.
		v.Set(reflect.ValueOf("v"))
	}
}

func filled[T any]() *T {
	var v T
	fill(reflect.ValueOf(&v), 0)
	return &v
}

// strictDecode decodes data into out, failing on any field out lacks.
func strictDecode(t *testing.T, data []byte, out any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	typ := reflect.TypeOf(out).Elem()
	must.NoError(t, dec.Decode(out), must.Sprintf("decoding into %s.%s", typ.PkgPath(), typ.Name()))
}

// roundTrip sends ours through the official type T and back, asserting that
// every field we emit is known to upstream (except the ones in ourOnly, which
// it is expected to drop) and that the rest survives unchanged. A dotted
// name in ourOnly ("RescheduleTracker.Events.Delay") reaches into nested
// objects, and into every element of a list on the way.
func roundTrip[O, T any](t *testing.T, ours *O, ourOnly ...string) {
	t.Helper()
	data, err := json.Marshal(ours)
	must.NoError(t, err)

	var generic map[string]any
	must.NoError(t, json.Unmarshal(data, &generic))
	for _, f := range ourOnly {
		deletePath(generic, strings.Split(f, "."))
	}
	trimmed, err := json.Marshal(generic)
	must.NoError(t, err)

	theirs := new(T)
	strictDecode(t, trimmed, theirs)

	back, err := json.Marshal(theirs)
	must.NoError(t, err)
	got := new(O)
	must.NoError(t, json.Unmarshal(back, got))

	want := new(O)
	must.NoError(t, json.Unmarshal(trimmed, want))
	must.Eq(t, want, got)
}

// deletePath removes the field at path from v, a decoded JSON value.
func deletePath(v any, path []string) {
	switch v := v.(type) {
	case map[string]any:
		if len(path) == 1 {
			delete(v, path[0])
			return
		}
		deletePath(v[path[0]], path[1:])
	case []any:
		for _, e := range v {
			deletePath(e, path)
		}
	}
}

// Upstream's JSON, with every one of its fields set, must decode into our
// types without a type error: that is what our client sees when pointed at
// an upstream agent, and what our agent sees from the official client.
func decodeTheirs[T, O any](t *testing.T) {
	t.Helper()
	data, err := json.Marshal(filled[T]())
	must.NoError(t, err)
	must.NoError(t, json.Unmarshal(data, new(O)), must.Sprintf("decoding upstream %T into %T", *new(T), *new(O)))
}

// A hand-written job, every field we model set, survives our JSON →
// official api.Job → JSON → our api.Job, and the official struct sees the
// values where its own code looks for them.
func TestWire_JobThroughOfficialClient(t *testing.T) {
	job := &api.Job{
		Region:      new("eu"),
		Namespace:   new("edge"),
		ID:          new("web"),
		Name:        new("web-name"),
		Type:        new(api.JobTypeService),
		Priority:    new(70),
		AllAtOnce:   new(true),
		Datacenters: []string{"dc1", "dc2"},
		NodePool:    new("lte"),
		Constraints: []*api.Constraint{api.NewConstraint("${attr.kernel.name}", "=", "linux")},
		Affinities:  []*api.Affinity{api.NewAffinity("${node.datacenter}", "=", "dc1", -30)},
		Meta:        map[string]string{"owner": "ops"},
		TaskGroups: []*api.TaskGroup{{
			Name:        new("app"),
			Count:       new(3),
			Constraints: []*api.Constraint{api.NewConstraint("", api.ConstraintDistinctHosts, "true")},
			Affinities:  []*api.Affinity{{LTarget: "${meta.rack}", RTarget: "r1", Operand: "=", Weight: new(int8(0))}},
			RestartPolicy: &api.RestartPolicy{
				Interval: new(10 * time.Minute), Attempts: new(4), Delay: new(5 * time.Second),
				Mode: new(api.RestartPolicyModeDelay), RenderTemplates: new(true),
			},
			ReschedulePolicy: &api.ReschedulePolicy{
				Attempts: new(2), Interval: new(time.Hour), Delay: new(10 * time.Second),
				DelayFunction: new(api.DelayFunctionFibonacci), MaxDelay: new(5 * time.Minute), Unlimited: new(false),
			},
			EphemeralDisk: &api.EphemeralDisk{Sticky: new(true), Migrate: new(true), SizeMB: new(500)},
			Meta:          map[string]string{"tier": "front"},
			Disconnect: &api.DisconnectStrategy{
				LostAfter: new(time.Hour), StopOnClientAfter: new(90 * time.Second),
				Replace: new(false), Reconcile: new(api.ReconcileOptionLongestRunning),
			},
			MaxClientDisconnect:       new(2 * time.Hour),
			StopAfterClientDisconnect: new(time.Minute),
			Tasks: []*api.Task{{
				Name:   "server",
				Driver: "mock_driver",
				Config: map[string]any{
					"run_for":   "30s",
					"exit_code": float64(0),
					"args":      []any{"-v", "x"},
					"nested":    map[string]any{"k": true},
				},
				Env:         map[string]string{"PORT": "8080"},
				Resources:   &api.Resources{CPU: new(250), Cores: new(0), MemoryMB: new(128), MemoryMaxMB: new(256), DiskMB: new(10)},
				Constraints: []*api.Constraint{api.NewConstraint("${attr.os.name}", "!=", "windows")},
				Affinities:  []*api.Affinity{api.NewAffinity("${attr.cpu.arch}", "=", "arm64", 100)},
				RestartPolicy: &api.RestartPolicy{
					Attempts: new(1),
				},
				Meta:        map[string]string{"role": "leader"},
				KillTimeout: new(20 * time.Second),
				KillSignal:  "SIGINT",
				Leader:      true,
			}},
		}},
		Stop:              new(false),
		ParentID:          new("parent"),
		Status:            new(api.JobStatusRunning),
		StatusDescription: new("ok"),
		Stable:            new(true),
		Version:           new(uint64(4)),
		SubmitTime:        new(int64(1700000000000000000)),
		CreateIndex:       new(uint64(10)),
		ModifyIndex:       new(uint64(20)),
		JobModifyIndex:    new(uint64(19)),
	}

	data, err := json.Marshal(job)
	must.NoError(t, err)
	var theirs nomadapi.Job
	strictDecode(t, data, &theirs)

	// Spot-check that upstream reads the values in its own fields.
	must.Eq(t, "web", *theirs.ID)
	must.Eq(t, 70, *theirs.Priority)
	must.Eq(t, "lte", *theirs.NodePool)
	tg := theirs.TaskGroups[0]
	must.Eq(t, 3, *tg.Count)
	must.Eq(t, time.Hour, *tg.Disconnect.LostAfter)
	must.Eq(t, 90*time.Second, *tg.Disconnect.StopOnClientAfter)
	must.False(t, *tg.Disconnect.Replace)
	must.Eq(t, nomadapi.ReconcileOptionLongestRunning, *tg.Disconnect.Reconcile)
	// The legacy fields are first-class here (see
	// docs/concepts/disconnected-clients.md, "Configuration and validation"),
	// deprecated upstream.
	//lint:ignore SA1019 legacy field kept on purpose
	must.Eq(t, 2*time.Hour, *tg.MaxClientDisconnect)
	//lint:ignore SA1019 legacy field kept on purpose
	must.Eq(t, time.Minute, *tg.StopAfterClientDisconnect)
	must.Eq(t, int8(0), *tg.Affinities[0].Weight)
	must.Eq(t, 500, *tg.EphemeralDisk.SizeMB)
	task := tg.Tasks[0]
	must.Eq(t, "mock_driver", task.Driver)
	must.Eq(t, "30s", task.Config["run_for"])
	must.Eq(t, 20*time.Second, *task.KillTimeout)
	must.Eq(t, 256, *task.Resources.MemoryMaxMB)
	must.True(t, task.Leader)

	back, err := json.Marshal(&theirs)
	must.NoError(t, err)
	var got api.Job
	must.NoError(t, json.Unmarshal(back, &got))
	must.Eq(t, job, &got)
}

// Every field of every wire type, set by reflection so that a field added
// later is covered too, survives the trip through the official type.
func TestWire_AllTypesThroughOfficialClient(t *testing.T) {
	// disconnect.offline_restart is ours alone (see "Offline reboot" in
	// docs/concepts/disconnected-clients.md); upstream drops it.
	t.Run("Job", func(t *testing.T) {
		roundTrip[api.Job, nomadapi.Job](t, filled[api.Job](), "TaskGroups.Disconnect.OfflineRestart")
	})
	t.Run("JobListStub", func(t *testing.T) { roundTrip[api.JobListStub, nomadapi.JobListStub](t, filled[api.JobListStub]()) })
	// The dispatch request's WriteRequest is ours (upstream's body has
	// none); the answers' WriteMeta fields are client-side only.
	t.Run("JobDispatchRequest", func(t *testing.T) {
		roundTrip[api.JobDispatchRequest, nomadapi.JobDispatchRequest](t, filled[api.JobDispatchRequest](), "Region", "Namespace")
	})
	t.Run("JobDispatchResponse", func(t *testing.T) {
		roundTrip[api.JobDispatchResponse, nomadapi.JobDispatchResponse](t, filled[api.JobDispatchResponse]())
	})
	t.Run("PeriodicConfig", func(t *testing.T) {
		roundTrip[api.PeriodicConfig, nomadapi.PeriodicConfig](t, filled[api.PeriodicConfig]())
	})
	t.Run("ParameterizedJobConfig", func(t *testing.T) {
		roundTrip[api.ParameterizedJobConfig, nomadapi.ParameterizedJobConfig](t, filled[api.ParameterizedJobConfig]())
	})
	t.Run("JobSummary", func(t *testing.T) { roundTrip[api.JobSummary, nomadapi.JobSummary](t, filled[api.JobSummary]()) })
	t.Run("JobRegisterRequest", func(t *testing.T) {
		roundTrip[api.JobRegisterRequest, nomadapi.JobRegisterRequest](t, filled[api.JobRegisterRequest]())
	})
	t.Run("JobRegisterResponse", func(t *testing.T) {
		roundTrip[api.JobRegisterResponse, nomadapi.JobRegisterResponse](t, filled[api.JobRegisterResponse]())
	})
	t.Run("JobDeregisterResponse", func(t *testing.T) {
		roundTrip[api.JobDeregisterResponse, nomadapi.JobDeregisterResponse](t, filled[api.JobDeregisterResponse]())
	})
	t.Run("JobValidateRequest", func(t *testing.T) {
		roundTrip[api.JobValidateRequest, nomadapi.JobValidateRequest](t, filled[api.JobValidateRequest]())
	})
	t.Run("JobValidateResponse", func(t *testing.T) {
		roundTrip[api.JobValidateResponse, nomadapi.JobValidateResponse](t, filled[api.JobValidateResponse]())
	})
	t.Run("JobsParseRequest", func(t *testing.T) {
		roundTrip[api.JobsParseRequest, nomadapi.JobsParseRequest](t, filled[api.JobsParseRequest]())
	})
	// AllocStates and the reschedule events' Delay are ours only:
	// upstream's server sends them but its client library has no field for
	// them. ReconnectDecision and DisconnectPolicy are ours alone.
	t.Run("Allocation", func(t *testing.T) {
		roundTrip[api.Allocation, nomadapi.Allocation](t, filled[api.Allocation](), "AllocStates", "RescheduleTracker.Events.Delay",
			"ReconnectDecision", "DisconnectPolicy")
	})
	t.Run("AllocationListStub", func(t *testing.T) {
		roundTrip[api.AllocationListStub, nomadapi.AllocationListStub](t, filled[api.AllocationListStub](),
			"RescheduleTracker.Events.Delay")
	})
	t.Run("JobPlanRequest", func(t *testing.T) {
		roundTrip[api.JobPlanRequest, nomadapi.JobPlanRequest](t, filled[api.JobPlanRequest]())
	})
	// DisconnectPolicies is ours alone (node pools' disconnect policy).
	t.Run("JobPlanResponse", func(t *testing.T) {
		roundTrip[api.JobPlanResponse, nomadapi.JobPlanResponse](t, filled[api.JobPlanResponse](), "DisconnectPolicies")
	})
	t.Run("JobVersionsResponse", func(t *testing.T) {
		roundTrip[api.JobVersionsResponse, nomadapi.JobVersionsResponse](t, filled[api.JobVersionsResponse]())
	})
	t.Run("JobRevertRequest", func(t *testing.T) {
		roundTrip[api.JobRevertRequest, nomadapi.JobRevertRequest](t, filled[api.JobRevertRequest]())
	})
	t.Run("JobStabilityRequest", func(t *testing.T) {
		roundTrip[api.JobStabilityRequest, nomadapi.JobStabilityRequest](t, filled[api.JobStabilityRequest]())
	})
	t.Run("ScalingRequest", func(t *testing.T) {
		roundTrip[api.ScalingRequest, nomadapi.ScalingRequest](t, filled[api.ScalingRequest]())
	})
	// Unknown is our addition to the scale status (allocations on
	// disconnected nodes); the official client has no field for it.
	t.Run("JobScaleStatusResponse", func(t *testing.T) {
		roundTrip[api.JobScaleStatusResponse, nomadapi.JobScaleStatusResponse](t, filled[api.JobScaleStatusResponse](), "TaskGroups.s.Unknown", "TaskGroups.s.Reconnecting", "TaskGroups.s.Unstable")
	})
	t.Run("Node", func(t *testing.T) { roundTrip[api.Node, nomadapi.Node](t, filled[api.Node]()) })
	t.Run("NodeListStub", func(t *testing.T) {
		roundTrip[api.NodeListStub, nomadapi.NodeListStub](t, filled[api.NodeListStub](), "StatusUpdatedAt")
	})
	t.Run("Evaluation", func(t *testing.T) { roundTrip[api.Evaluation, nomadapi.Evaluation](t, filled[api.Evaluation]()) })
	t.Run("ServerMembers", func(t *testing.T) {
		roundTrip[api.ServerMembers, nomadapi.ServerMembers](t, filled[api.ServerMembers]())
	})
	t.Run("RaftConfiguration", func(t *testing.T) {
		roundTrip[api.RaftConfiguration, nomadapi.RaftConfiguration](t, filled[api.RaftConfiguration]())
	})
	// EvalPriority and a group's AutoPromote are upstream server fields its
	// client library lacks.
	t.Run("Deployment", func(t *testing.T) {
		roundTrip[api.Deployment, nomadapi.Deployment](t, filled[api.Deployment](), "EvalPriority", "TaskGroups.s.AutoPromote")
	})
	t.Run("DeploymentUpdateResponse", func(t *testing.T) {
		roundTrip[api.DeploymentUpdateResponse, nomadapi.DeploymentUpdateResponse](t, filled[api.DeploymentUpdateResponse]())
	})
	t.Run("DeploymentPromoteRequest", func(t *testing.T) {
		roundTrip[api.DeploymentPromoteRequest, nomadapi.DeploymentPromoteRequest](t, filled[api.DeploymentPromoteRequest]())
	})
	t.Run("DeploymentPauseRequest", func(t *testing.T) {
		roundTrip[api.DeploymentPauseRequest, nomadapi.DeploymentPauseRequest](t, filled[api.DeploymentPauseRequest]())
	})
	t.Run("DeploymentAllocHealthRequest", func(t *testing.T) {
		roundTrip[api.DeploymentAllocHealthRequest, nomadapi.DeploymentAllocHealthRequest](t, filled[api.DeploymentAllocHealthRequest]())
	})
}

// What an upstream agent (or the official client) sends, with every one of
// its fields set, decodes into our types without a type error.
func TestWire_OfficialJSONDecodesIntoOurs(t *testing.T) {
	decodeTheirs[nomadapi.Job, api.Job](t)
	decodeTheirs[nomadapi.JobListStub, api.JobListStub](t)
	decodeTheirs[nomadapi.JobSummary, api.JobSummary](t)
	decodeTheirs[nomadapi.JobRegisterRequest, api.JobRegisterRequest](t)
	decodeTheirs[nomadapi.JobRegisterResponse, api.JobRegisterResponse](t)
	decodeTheirs[nomadapi.JobValidateResponse, api.JobValidateResponse](t)
	decodeTheirs[nomadapi.Allocation, api.Allocation](t)
	decodeTheirs[nomadapi.AllocationListStub, api.AllocationListStub](t)
	decodeTheirs[nomadapi.JobPlanResponse, api.JobPlanResponse](t)
	decodeTheirs[nomadapi.JobVersionsResponse, api.JobVersionsResponse](t)
	decodeTheirs[nomadapi.JobRevertRequest, api.JobRevertRequest](t)
	decodeTheirs[nomadapi.ScalingRequest, api.ScalingRequest](t)
	decodeTheirs[nomadapi.JobScaleStatusResponse, api.JobScaleStatusResponse](t)
	decodeTheirs[nomadapi.Node, api.Node](t)
	decodeTheirs[nomadapi.NodeListStub, api.NodeListStub](t)
	decodeTheirs[nomadapi.Evaluation, api.Evaluation](t)
	decodeTheirs[nomadapi.ServerMembers, api.ServerMembers](t)
	decodeTheirs[nomadapi.RaftConfiguration, api.RaftConfiguration](t)
	decodeTheirs[nomadapi.Deployment, api.Deployment](t)
	decodeTheirs[nomadapi.DeploymentUpdateResponse, api.DeploymentUpdateResponse](t)
}

// Canonicalize is differential-tested against the official client's: the
// same partial job, canonicalized by each, must agree on every field we
// model, for every job type. A default drifting from upstream's would make
// `job inspect` and the parse endpoint disagree with what operators know.
func TestCanonicalize_MatchesOfficialClient(t *testing.T) {
	partial := func(typ string) *api.Job {
		j := &api.Job{ID: new("web"), Datacenters: []string{"dc1"}}
		if typ != "" {
			j.Type = new(typ)
		}
		j.Affinities = []*api.Affinity{{LTarget: "${node.class}", RTarget: "x", Operand: "="}}
		// Job-level reschedule and migrate are merged under each
		// group's own, field by field.
		j.Reschedule = &api.ReschedulePolicy{Attempts: new(5), Interval: new(2 * time.Hour)}
		j.Migrate = &api.MigrateStrategy{MaxParallel: new(3)}
		j.TaskGroups = []*api.TaskGroup{
			{
				Name:  new("bare"),
				Tasks: []*api.Task{{Name: "t", Driver: "mock_driver"}},
			},
			{
				Name:             new("partial"),
				Count:            new(0),
				RestartPolicy:    &api.RestartPolicy{Attempts: new(9)},
				ReschedulePolicy: &api.ReschedulePolicy{Delay: new(time.Second), Attempts: new(1)},
				Migrate:          &api.MigrateStrategy{HealthCheck: new("task_states")},
				ShutdownDelay:    new(3 * time.Second),
				EphemeralDisk:    &api.EphemeralDisk{Sticky: new(true)},
				Disconnect:       &api.DisconnectStrategy{LostAfter: new(time.Minute)},
				Affinities:       []*api.Affinity{{LTarget: "a", RTarget: "b", Operand: "=", Weight: new(int8(0))}},
				Tasks: []*api.Task{
					{Name: "cores", Driver: "mock_driver", Resources: &api.Resources{Cores: new(2)}},
					{
						Name: "own-restart", Driver: "mock_driver",
						RestartPolicy: &api.RestartPolicy{Mode: new(api.RestartPolicyModeDelay)},
						Resources:     &api.Resources{CPU: new(50)},
						KillTimeout:   new(time.Second),
						ShutdownDelay: 2 * time.Second,
					},
					{
						Name: "proxy", Driver: "mock_driver",
						Lifecycle: &api.TaskLifecycle{Hook: api.TaskLifecycleHookPrestart, Sidecar: true},
					},
					// An empty block is kept, as the official client keeps it.
					{Name: "empty-lifecycle", Driver: "mock_driver", Lifecycle: &api.TaskLifecycle{}},
				},
			},
		}
		return j
	}

	for _, typ := range []string{"", api.JobTypeService, api.JobTypeBatch, api.JobTypeSystem, api.JobTypeSysbatch} {
		t.Run(fmt.Sprintf("type=%q", typ), func(t *testing.T) {
			ours := partial(typ)
			data, err := json.Marshal(ours)
			must.NoError(t, err)
			var theirs nomadapi.Job
			must.NoError(t, json.Unmarshal(data, &theirs))

			ours.Canonicalize()
			theirs.Canonicalize()

			back, err := json.Marshal(&theirs)
			must.NoError(t, err)
			var want api.Job
			must.NoError(t, json.Unmarshal(back, &want))
			must.Eq(t, &want, ours)
		})
	}
}

// Canonicalize must be idempotent: the server canonicalizes again what the
// CLI already did.
func TestCanonicalize_Idempotent(t *testing.T) {
	j := api.NewBatchJob("b", "b", "global", 50)
	j.AddTaskGroup(api.NewTaskGroup("g", 2).AddTask(api.NewTask("t", "mock_driver")))
	j.Canonicalize()
	once, err := json.Marshal(j)
	must.NoError(t, err)
	j.Canonicalize()
	twice, err := json.Marshal(j)
	must.NoError(t, err)
	must.Eq(t, string(once), string(twice))
}

// Tasks must not share their group's restart policy pointer: editing one
// task's policy after canonicalization would otherwise change its siblings.
func TestCanonicalize_TaskRestartPolicyNotAliased(t *testing.T) {
	j := api.NewServiceJob("s", "s", "global", 50)
	g := api.NewTaskGroup("g", 1).AddTask(api.NewTask("a", "mock_driver")).AddTask(api.NewTask("b", "mock_driver"))
	j.AddTaskGroup(g)
	j.Canonicalize()
	*g.Tasks[0].RestartPolicy.Attempts = 99
	must.Eq(t, 2, *g.Tasks[1].RestartPolicy.Attempts)
	must.Eq(t, 2, *g.RestartPolicy.Attempts)
}
