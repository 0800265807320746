package structs_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// t0 is the fixed server time the fixtures are stamped with, so two calls
// of a fixture build equal objects.
var t0 = time.Date(2024, 5, 6, 7, 8, 9, 10, time.UTC)

func ptr[T any](v T) *T { return &v }

// The full* fixtures set every exported field (mustFill checks that), so a
// Copy or an encoding that forgets a field is caught, including fields added
// later. They are not valid jobs: the disconnect fields contradict each
// other on purpose, to be all present.

func fullConstraint(tag string) *structs.Constraint {
	return &structs.Constraint{LTarget: "${attr." + tag + "}", RTarget: tag, Operand: "="}
}

func fullAffinity(tag string) *structs.Affinity {
	return &structs.Affinity{LTarget: "${meta." + tag + "}", RTarget: tag, Operand: "=", Weight: 50}
}

func fullRestart() *structs.RestartPolicy {
	return &structs.RestartPolicy{Attempts: 2, Interval: time.Hour, Delay: time.Second, Mode: structs.RestartPolicyModeDelay, RenderTemplates: true}
}

// fullTask's Config holds only types msgpack decodes back as themselves
// (string, bool, int64, float64, []any, map[string]any).
func fullTask(name string) *structs.Task {
	return &structs.Task{
		Name:   name,
		Driver: "mock_driver",
		User:   "nobody",
		Config: map[string]any{
			"command": "/bin/app",
			"args":    []any{"-v", "--port", int64(8080)},
			"ratio":   1.5,
			"debug":   true,
			"labels":  map[string]any{"team": "edge", "nested": map[string]any{"deep": "value"}},
			"mount":   []any{map[string]any{"source": "/data", "readonly": true}},
		},
		Env:             map[string]string{"FOO": "bar"},
		Resources:       &structs.Resources{CPU: 500, Cores: 1, MemoryMB: 256, MemoryMaxMB: 512, DiskMB: 10},
		Constraints:     []*structs.Constraint{fullConstraint("task")},
		Affinities:      []*structs.Affinity{fullAffinity("task")},
		RestartPolicy:   fullRestart(),
		Meta:            map[string]string{"task": "meta"},
		KillTimeout:     7 * time.Second,
		ShutdownDelay:   3 * time.Second,
		KillSignal:      "SIGINT",
		LogConfig:       &structs.LogConfig{MaxFiles: 3, MaxFileSizeMB: 5},
		Leader:          true,
		DispatchPayload: &structs.DispatchPayloadConfig{File: "input.json"},
		Artifacts: []*structs.TaskArtifact{{
			GetterSource: "https://example.com/app.tgz", GetterOptions: map[string]string{"archive": "tgz"},
			GetterHeaders: map[string]string{"X-Edge": "1"}, GetterMode: "dir", RelativeDest: "local/app",
		}},
		Lifecycle: &structs.TaskLifecycleConfig{Hook: structs.TaskLifecycleHookPrestart, Sidecar: true},
		Services:  []*structs.Service{fullService(name)},
		Templates: []*structs.Template{{EmbeddedTmpl: "x", DestPath: "local/x", ChangeMode: "signal", ChangeSignal: "SIGHUP",
			Splay: time.Second, Perms: "0600", LeftDelim: "[[", RightDelim: "]]", Envvars: true, ErrMissingKey: true, SourcePath: "s",
			Wait:         &structs.TemplateWait{Min: time.Second, Max: time.Minute},
			ChangeScript: &structs.ChangeScript{Command: "/bin/reload", Args: []string{"-q"}, Timeout: time.Second, FailOnError: true},
			Uid:          new(1000), Gid: new(1000)}},
		Identity:   &structs.WorkloadIdentity{Name: "default", Audience: []string{"a"}, ChangeMode: "noop", ChangeSignal: "SIGHUP", Env: true, File: true, TTL: time.Hour},
		Identities: []*structs.WorkloadIdentity{{Name: "vault", Audience: []string{"vault.io"}, ChangeMode: "signal", ChangeSignal: "SIGHUP", Env: true, File: true, TTL: time.Hour}},
		VolumeMounts: []*structs.VolumeMount{{
			Volume: "data", Destination: "/srv/data", ReadOnly: true, PropagationMode: structs.VolumeMountPropagationHostToTask,
		}},
	}
}

// fullService is a service with every field set, and one check likewise.
func fullService(name string) *structs.Service {
	return &structs.Service{
		Name: name + "-svc", Tags: []string{"v1"}, CanaryTags: []string{"canary"}, PortLabel: "http",
		AddressMode: structs.AddressModeHost, Address: "10.0.0.1", Meta: map[string]string{"m": "1"},
		CanaryMeta: map[string]string{"c": "1"}, TaskName: name, OnUpdate: structs.OnUpdateIgnoreWarn,
		Provider: structs.ServiceProviderNomad,
		Checks: []*structs.ServiceCheck{{
			Name: "alive", Type: structs.ServiceCheckHTTP, Command: "/bin/check", Args: []string{"-q"},
			Path: "/health", Protocol: "https", PortLabel: "http", AddressMode: structs.AddressModeHost,
			Method: "GET", Header: map[string][]string{"X": {"y"}}, Interval: 10 * time.Second,
			Timeout: 2 * time.Second, InitialStatus: structs.CheckStatusWarning, TLSSkipVerify: true,
			Expose: true, SuccessBeforePassing: 2, FailuresBeforeCritical: 3, OnUpdate: structs.OnUpdateIgnore,
			CheckRestart: &structs.CheckRestart{Limit: 3, Grace: time.Minute, IgnoreWarnings: true},
			TaskName:     name,
		}},
	}
}

func fullTaskGroup(name string) *structs.TaskGroup {
	return &structs.TaskGroup{
		Name:          name,
		Count:         3,
		Constraints:   []*structs.Constraint{fullConstraint("group")},
		Affinities:    []*structs.Affinity{fullAffinity("group")},
		Spreads:       []*structs.Spread{fullSpread("${meta.rack}")},
		Tasks:         []*structs.Task{fullTask(name + "-main"), fullTask(name + "-sidecar")},
		RestartPolicy: fullRestart(),
		ReschedulePolicy: &structs.ReschedulePolicy{
			Attempts: 3, Interval: time.Hour, Delay: time.Minute,
			DelayFunction: structs.DelayFunctionFibonacci, MaxDelay: 2 * time.Hour, Unlimited: true,
		},
		EphemeralDisk:             &structs.EphemeralDisk{Sticky: true, SizeMB: 150, Migrate: true},
		Meta:                      map[string]string{"group": "meta"},
		MaxClientDisconnect:       ptr(time.Hour),
		StopAfterClientDisconnect: ptr(90 * time.Second),
		Disconnect: &structs.DisconnectStrategy{
			LostAfter:         30 * time.Minute,
			StopOnClientAfter: ptr(2 * time.Minute),
			Replace:           ptr(true),
			Reconcile:         structs.ReconcileOptionKeepOriginal,
			OfflineRestart:    ptr(true),
		},
		Update:        fullUpdate(),
		Migrate:       &structs.MigrateStrategy{MaxParallel: 2, HealthCheck: "task_states", MinHealthyTime: 10 * time.Second, HealthyDeadline: 5 * time.Minute},
		ShutdownDelay: ptr(4 * time.Second),
		Scaling: &structs.ScalingPolicy{
			ID: "policy-" + name, Type: structs.ScalingPolicyTypeHorizontal,
			Target: map[string]string{"Namespace": "default", "Job": "j", "Group": name},
			Policy: map[string]any{"cooldown": "1m", "check": []any{map[string]any{"cpu": []any{map[string]any{"source": "nomad-apm"}}}}},
			Min:    1, Max: 10, Enabled: true, CreateIndex: 7, ModifyIndex: 8,
		},
		Networks: []*structs.NetworkResource{{
			Mode:          structs.NetworkModeHost,
			ReservedPorts: []structs.Port{{Label: "admin", Value: 9090, To: 90, HostNetwork: "default"}},
			DynamicPorts:  []structs.Port{{Label: "http", Value: 1, To: 8080, HostNetwork: "default"}},
			DNS:           &structs.DNSConfig{Servers: []string{"10.0.0.53"}, Searches: []string{"svc"}, Options: []string{"ndots:2"}},
			Hostname:      "web",
		}},
		Services: []*structs.Service{fullService(name)},
		Volumes: map[string]*structs.VolumeRequest{"data": {
			Name: "data", Type: structs.VolumeTypeHost, Source: "data", ReadOnly: true,
			// Refused by validation, carried on the wire.
			AccessMode: "single-node-writer", AttachmentMode: "file-system", PerAlloc: true,
			MountOptions: &structs.CSIMountOptions{FSType: "ext4", MountFlags: []string{"noatime"}},
		}},
	}
}

func fullUpdate() *structs.UpdateStrategy {
	return &structs.UpdateStrategy{
		Stagger: time.Second, MaxParallel: 2, HealthCheck: structs.UpdateHealthCheckTaskStates,
		MinHealthyTime: time.Second, HealthyDeadline: time.Minute, ProgressDeadline: 2 * time.Minute,
		AutoRevert: true, AutoPromote: true, Canary: 1,
	}
}

func fullDeployment() *structs.Deployment {
	return &structs.Deployment{
		ID: "dep-1", Namespace: "fleet", JobID: "edge-app", JobVersion: 4, JobModifyIndex: 20,
		JobSpecModifyIndex: 15, JobCreateIndex: 10, IsMultiregion: true,
		TaskGroups: map[string]*structs.DeploymentState{"web": {
			AutoRevert: true, AutoPromote: true, ProgressDeadline: time.Minute, RequireProgressBy: t0,
			Promoted: true, PlacedCanaries: []string{"alloc-1"}, DesiredCanaries: 1, DesiredTotal: 3,
			PlacedAllocs: 2, HealthyAllocs: 1, UnhealthyAllocs: 1,
		}},
		Status: structs.DeploymentStatusRunning, StatusDescription: structs.DeploymentStatusDescriptionRunning,
		EvalPriority: 50, CreateIndex: 5, ModifyIndex: 6, CreateTime: t0.UnixNano(), ModifyTime: t0.UnixNano(),
	}
}

func fullJob() *structs.Job {
	return &structs.Job{
		ID:          "edge-app",
		Name:        "edge app",
		Namespace:   "fleet",
		Region:      "eu",
		Type:        structs.JobTypeService,
		Priority:    70,
		AllAtOnce:   true,
		Datacenters: []string{"dc1", "dc2"},
		NodePool:    "lte",
		Constraints: []*structs.Constraint{fullConstraint("job")},
		Affinities:  []*structs.Affinity{fullAffinity("job")},
		Spreads:     []*structs.Spread{fullSpread("${node.datacenter}")},
		TaskGroups:  []*structs.TaskGroup{fullTaskGroup("web"), fullTaskGroup("db")},
		Meta:        map[string]string{"owner": "ops"},
		ParentID:    "edge-parent",
		Update:      fullUpdate(),
		Periodic: &structs.PeriodicConfig{Enabled: true, Spec: "*/5 * * * *", Specs: []string{"0 3 * * *"},
			SpecType: structs.PeriodicSpecCron, ProhibitOverlap: true, TimeZone: "Europe/Paris"},
		ParameterizedJob: &structs.ParameterizedJobConfig{Payload: structs.DispatchPayloadRequired,
			MetaRequired: []string{"site"}, MetaOptional: []string{"level"}},
		Dispatched:        true,
		Payload:           []byte("payload"),
		Stop:              true,
		Status:            structs.JobStatusRunning,
		StatusDescription: "running fine",
		Stable:            true,
		Version:           4,
		SubmitTime:        t0.UnixNano(),
		CreateIndex:       10,
		ModifyIndex:       20,
		JobModifyIndex:    15,
	}
}

func fullAllocMetric() *structs.AllocMetric {
	return &structs.AllocMetric{
		NodesEvaluated:     5,
		NodesFiltered:      2,
		NodesInPool:        9,
		NodesAvailable:     map[string]int{"dc1": 4},
		ClassFiltered:      map[string]int{"gpu": 1},
		ConstraintFiltered: map[string]int{"${attr.kernel.name} = linux": 1},
		NodesExhausted:     1,
		ClassExhausted:     map[string]int{"small": 1},
		DimensionExhausted: map[string]int{"memory": 1},
		QuotaExhausted:     []string{"cpu"},
		ScoreMetaData: []*structs.NodeScoreMeta{
			{NodeID: "node-a", Scores: map[string]float64{"binpack": 0.7}, NormScore: 0.7},
		},
		AllocationTime:    3 * time.Millisecond,
		CoalescedFailures: 1,
	}
}

func fullTaskEvent() *structs.TaskEvent {
	return &structs.TaskEvent{
		Type:            structs.TaskClientReconnected,
		Time:            t0.UnixNano(),
		Message:         "msg",
		DisplayMessage:  "Client reconnected",
		Details:         map[string]string{"k": "v"},
		FailsTask:       true,
		RestartReason:   "restart",
		SetupError:      "setup",
		DriverError:     "driver",
		DriverMessage:   "driver msg",
		ExitCode:        3,
		Signal:          9,
		KillReason:      "kill",
		KillTimeout:     time.Second,
		KillError:       "kill err",
		StartDelay:      5,
		FailedSibling:   "sib",
		ValidationError: "invalid",
		DownloadError:   "failed to download",
	}
}

func fullAlloc() *structs.Allocation {
	job := fullJob()
	return &structs.Allocation{
		ID:        "alloc-1",
		Namespace: "fleet",
		EvalID:    "eval-1",
		Name:      structs.AllocName(job.ID, "web", 2),
		NodeID:    "node-a",
		NodeName:  "edge-node-a",
		JobID:     job.ID,
		Job:       job,
		TaskGroup: "web",
		AllocatedResources: &structs.AllocatedResources{
			Tasks: map[string]*structs.AllocatedTaskResources{
				"web-main": {
					Cpu:    structs.AllocatedCpuResources{CpuShares: 500},
					Memory: structs.AllocatedMemoryResources{MemoryMB: 256, MemoryMaxMB: 512},
				},
			},
			Shared: structs.AllocatedSharedResources{DiskMB: 150, Ports: structs.AllocatedPorts{{Label: "http", Value: 23456, To: 8080, HostIP: "10.0.0.5"}}},
		},
		Metrics:            fullAllocMetric(),
		DesiredStatus:      structs.AllocDesiredStatusRun,
		DesiredDescription: "desired",
		DesiredTransition: structs.DesiredTransition{
			Migrate: ptr(true), Reschedule: ptr(true), ForceReschedule: ptr(true), NoShutdownDelay: ptr(true),
		},
		ClientStatus:      structs.AllocClientStatusUnknown,
		ClientDescription: structs.AllocUnknown,
		TaskStates: map[string]*structs.TaskState{
			"web-main": {
				State:       structs.TaskStateRunning,
				Failed:      true,
				Restarts:    2,
				LastRestart: t0.Add(-time.Minute),
				StartedAt:   t0.Add(-time.Hour),
				FinishedAt:  t0,
				Events:      []*structs.TaskEvent{fullTaskEvent()},
			},
		},
		AllocStates: []*structs.AllocState{
			{Field: structs.AllocStateFieldClientStatus, Value: structs.AllocClientStatusUnknown, Time: t0},
		},
		PreviousAllocation: "alloc-0",
		NextAllocation:     "alloc-2",
		RescheduleTracker: &structs.RescheduleTracker{
			Events: []*structs.RescheduleEvent{
				{RescheduleTime: t0.UnixNano(), PrevAllocID: "alloc-0", PrevNodeID: "node-z", Delay: time.Minute},
			},
			LastReschedule: "ok",
		},
		FollowupEvalID: "eval-2",
		DeploymentID:   "dep-1",
		DeploymentStatus: &structs.AllocDeploymentStatus{
			Healthy: ptr(true), Timestamp: t0, Canary: true, ModifyIndex: 33,
		},
		PreemptedAllocations:  []string{"alloc-p1", "alloc-p2"},
		PreemptedByAllocation: "alloc-p0",
		ReconnectDecision: &structs.ReconnectDecision{
			Rule: structs.ReconnectRuleStrategy, Strategy: structs.ReconcileOptionBestScore,
			KeptAllocID: "alloc-1", StoppedAllocID: "alloc-2", KeptScore: 0.7, StoppedScore: 0.4,
			EvalID: "eval-3", Time: t0.UnixNano(),
		},
		PoolDisconnect: &structs.PoolDisconnect{Pool: "edge", Policy: &structs.NodePoolDisconnect{
			LostAfter: time.Hour, Replace: new(true), Reconcile: structs.ReconcileOptionKeepOriginal,
			SiteOutage: fullSiteOutagePolicy(),
		}},
		CreateIndex:      30,
		ModifyIndex:      40,
		AllocModifyIndex: 35,
		CreateTime:       t0.UnixNano(),
		ModifyTime:       t0.Add(time.Second).UnixNano(),
	}
}

func fullNode() *structs.Node {
	return &structs.Node{
		ID:         "node-a",
		SecretID:   "s3cr3t-node-secret",
		Datacenter: "dc1",
		Name:       "edge-node-a",
		HTTPAddr:   "10.1.2.3:4646",
		Attributes: map[string]string{"kernel.name": "linux", "nomad.version": "0.1.0"},
		NodeResources: &structs.NodeResources{
			Cpu:            structs.NodeCpuResources{CpuShares: 4000, TotalCpuCores: 4},
			Memory:         structs.NodeMemoryResources{MemoryMB: 8192},
			Disk:           structs.NodeDiskResources{DiskMB: 10240},
			MinDynamicPort: 20000,
			MaxDynamicPort: 32000,
			NodeNetworks: []*structs.NodeNetworkResource{{Mode: "host", Device: "wwan0", Addresses: []structs.NodeNetworkAddress{
				{Family: "ipv4", Alias: "public", Address: "100.64.0.7", ReservedPorts: "22"},
			}}},
		},
		ReservedResources: &structs.NodeReservedResources{
			Cpu:      structs.NodeReservedCpuResources{CpuShares: 100},
			Memory:   structs.NodeReservedMemoryResources{MemoryMB: 256},
			Disk:     structs.NodeReservedDiskResources{DiskMB: 1024},
			Networks: structs.NodeReservedNetworkResources{ReservedHostPorts: "22,8000-8010"},
		},
		NodeMaxAllocs: 40,
		Links:         map[string]string{"rack": "r1"},
		Meta:          map[string]string{"site": "tower-7"},
		NodeClass:     "lte",
		NodePool:      "edge",
		Drain:         true,
		DrainStrategy: &structs.DrainStrategy{
			DrainSpec: structs.DrainSpec{Deadline: time.Hour, IgnoreSystemJobs: true}, ForceDeadline: t0.Add(time.Hour), StartedAt: t0,
		},
		LastDrain: &structs.DrainMetadata{
			StartedAt: t0, UpdatedAt: t0, Status: structs.DrainStatusDraining, AccessorID: "op", Meta: map[string]string{"why": "kernel"},
		},
		SchedulingEligibility: structs.NodeSchedulingEligible,
		Status:                structs.NodeStatusDisconnected,
		StatusDescription:     "missed heartbeat",
		StatusUpdatedAt:       t0.Unix(),
		Events: []*structs.NodeEvent{{
			Message: structs.NodeEventHeartbeatMissed, Subsystem: structs.NodeEventSubsystemCluster,
			Details: map[string]string{"k": "v"}, Timestamp: t0, CreateIndex: 3,
		}},
		Drivers: map[string]*structs.DriverInfo{
			"mock_driver": {Attributes: map[string]string{"driver.mock": "1"}, Detected: true, Healthy: true, HealthDescription: "ok", UpdateTime: t0},
		},
		HostVolumes: map[string]*structs.ClientHostVolumeConfig{"data": {Name: "data", Path: "/srv/data", ReadOnly: true}},
		CreateIndex: 1,
		ModifyIndex: 2,
	}
}

func fullEval() *structs.Evaluation {
	return &structs.Evaluation{
		ID:                "eval-1",
		Namespace:         "fleet",
		Priority:          70,
		Type:              structs.JobTypeService,
		TriggeredBy:       structs.EvalTriggerMaxDisconnectTimeout,
		JobID:             "edge-app",
		JobModifyIndex:    15,
		NodeID:            "node-a",
		NodeModifyIndex:   2,
		DeploymentID:      "deploy-1",
		Status:            structs.EvalStatusPending,
		StatusDescription: "waiting",
		Wait:              time.Second,
		WaitUntil:         t0.Add(time.Hour),
		NextEval:          "eval-2",
		PreviousEval:      "eval-0",
		BlockedEval:       "eval-b",
		RelatedEvals: []*structs.EvaluationStub{{
			ID: "eval-r", Namespace: "fleet", Priority: 70, Type: structs.JobTypeService,
			TriggeredBy: structs.EvalTriggerReconnect, JobID: "edge-app", Status: structs.EvalStatusComplete,
			CreateIndex: 4, ModifyIndex: 5,
		}},
		FailedTGAllocs:       map[string]*structs.AllocMetric{"web": fullAllocMetric()},
		ClassEligibility:     map[string]bool{"lte": true},
		EscapedComputedClass: true,
		QuotaLimitReached:    "quota",
		AnnotatePlan:         true,
		QueuedAllocations:    map[string]int{"web": 1},
		SnapshotIndex:        9,
		CreateIndex:          10,
		ModifyIndex:          11,
		CreateTime:           t0.UnixNano(),
		ModifyTime:           t0.UnixNano() + 1,
	}
}

func fullSummary() *structs.JobSummary {
	return &structs.JobSummary{
		JobID:     "edge-app",
		Namespace: "fleet",
		Summary: map[string]structs.TaskGroupSummary{
			"web": {Queued: 1, Complete: 2, Failed: 3, Running: 4, Starting: 5, Lost: 6, Unknown: 7},
		},
		Children:    &structs.JobChildrenSummary{Pending: 1, Running: 2, Dead: 3},
		CreateIndex: 5,
		ModifyIndex: 6,
	}
}

func fullWriteRequest() structs.WriteRequest {
	return structs.WriteRequest{Region: "eu", Namespace: "fleet", AuthToken: "s3cr3t"}
}

func fullQueryOptions() structs.QueryOptions {
	return structs.QueryOptions{
		Region: "eu", Namespace: "fleet", MinQueryIndex: 7, MaxQueryTime: time.Minute, Prefix: "ed", AllowStale: true, AuthToken: "s3cr3t",
	}
}

var timeType = reflect.TypeFor[time.Time]()

// zeroByDesign names fields ("Type.Field") whose only valid value today is
// their zero value.
var zeroByDesign = map[string]bool{
	"AllocState.Field": true, // AllocStateFieldClientStatus is 0
}

// mustFill fails for every exported field reachable from v that holds its
// zero value (or an empty map or slice), so a fixture cannot silently leave
// out the field a test is meant to cover. Free-form values (any) are not
// descended into.
func mustFill(t *testing.T, v any) {
	t.Helper()
	var empty []string
	var walk func(path string, v reflect.Value)
	walk = func(path string, v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer, reflect.Interface:
			if v.IsNil() {
				empty = append(empty, path)
				return
			}
			if v.Kind() == reflect.Pointer {
				walk(path, v.Elem())
			}
		case reflect.Struct:
			if v.Type() == timeType {
				if v.Interface().(time.Time).IsZero() {
					empty = append(empty, path)
				}
				return
			}
			for i := range v.NumField() {
				f := v.Type().Field(i)
				if f.IsExported() && !zeroByDesign[v.Type().Name()+"."+f.Name] {
					walk(path+"."+f.Name, v.Field(i))
				}
			}
		case reflect.Map:
			if v.Len() == 0 {
				empty = append(empty, path)
			}
			for it := v.MapRange(); it.Next(); {
				walk(path+"["+it.Key().String()+"]", it.Value())
			}
		case reflect.Slice:
			if v.Len() == 0 {
				empty = append(empty, path)
			}
			for i := range v.Len() {
				walk(path+"[]", v.Index(i))
			}
		default:
			if v.IsZero() {
				empty = append(empty, path)
			}
		}
	}
	walk(reflect.TypeOf(v).String(), reflect.ValueOf(v))
	if len(empty) > 0 {
		t.Fatalf("fixture leaves fields empty:\n%s", strings.Join(empty, "\n"))
	}
}

// scribble changes, in place, every value reachable from v through
// pointers, maps, slices and interfaces, and adds a key to every
// string-keyed map. Run on a copy, it turns any memory the copy shares with
// its original into a visible change of the original. Fields named in skip
// ("Type.Field") are shared by design and left alone.
func scribble(v reflect.Value, skip map[string]bool) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			scribble(v.Elem(), skip)
		}
	case reflect.Interface:
		if v.IsNil() {
			return
		}
		inner := reflect.New(v.Elem().Type()).Elem()
		inner.Set(v.Elem())
		scribble(inner, skip)
		v.Set(inner)
	case reflect.Struct:
		if v.Type() == timeType {
			v.Set(reflect.ValueOf(v.Interface().(time.Time).Add(time.Hour)))
			return
		}
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if f.IsExported() && !skip[v.Type().Name()+"."+f.Name] {
				scribble(v.Field(i), skip)
			}
		}
	case reflect.Map:
		if v.IsNil() {
			return
		}
		for _, k := range v.MapKeys() {
			val := reflect.New(v.Type().Elem()).Elem()
			val.Set(v.MapIndex(k))
			scribble(val, skip)
			v.SetMapIndex(k, val)
		}
		if v.Type().Key().Kind() == reflect.String {
			v.SetMapIndex(reflect.ValueOf("scribbled").Convert(v.Type().Key()), reflect.Zero(v.Type().Elem()))
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			scribble(v.Index(i), skip)
		}
	case reflect.String:
		v.SetString(v.String() + "~")
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(v.Int() + 1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(v.Uint() + 1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(v.Float() + 1.5)
	}
}

func fullSpread(attr string) *structs.Spread {
	return &structs.Spread{Attribute: attr, Weight: 70, SpreadTarget: []*structs.SpreadTarget{
		{Value: "a", Percent: 60}, {Value: "b", Percent: 40}}}
}

func fullSiteOutagePolicy() *structs.SiteOutagePolicy {
	return &structs.SiteOutagePolicy{Threshold: 0.5, Window: time.Minute, Scope: structs.SiteScopePool, MinNodes: 3}
}
