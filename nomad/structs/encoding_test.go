package structs_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// raftRequests returns, for every raft message type, a request of the type
// the FSM decodes for it, with every field set.
func raftRequests() map[structs.MessageType]any {
	return map[structs.MessageType]any{
		structs.NodeRegisterRequestType: &structs.NodeRegisterRequest{
			Node: fullNode(), UpdatedAt: t0.UnixNano(), Evals: []*structs.Evaluation{fullEval()}, WriteRequest: fullWriteRequest(),
		},
		structs.NodeDeregisterRequestType: &structs.NodeSpecificRequest{
			NodeID: "node-a", QueryOptions: fullQueryOptions(),
		},
		structs.NodeUpdateStatusRequestType: &structs.NodeUpdateStatusRequest{
			NodeID: "node-a", Status: structs.NodeStatusDisconnected,
			NodeEvent: fullNode().Events[0], UpdatedAt: t0.UnixNano(), Evals: []*structs.Evaluation{fullEval()}, WriteRequest: fullWriteRequest(),
		},
		structs.NodeBatchUpdateStatusRequestType: &structs.NodeBatchUpdateStatusRequest{
			Updates:   []*structs.NodeStatusUpdate{{NodeID: "node-a", Status: structs.NodeStatusReady, NodeEvent: fullNode().Events[0]}},
			UpdatedAt: t0.Unix(), Evals: []*structs.Evaluation{fullEval()}, WriteRequest: fullWriteRequest(),
			SiteOutages: &structs.SiteOutageUpdateRequest{
				Declare: []*structs.SiteOutage{{ID: "edge/dc1", Pool: "edge", Datacenter: "dc1", DeclaredAt: t0.UnixNano(),
					Disconnected: 6, Nodes: 8, Window: time.Minute, CreateIndex: 7, ModifyIndex: 8}},
				Clear:        []string{"edge/dc2"},
				NodeEvents:   map[string]*structs.NodeEvent{"node-1": fullNode().Events[0]},
				Evals:        []*structs.Evaluation{fullEval()},
				WriteRequest: fullWriteRequest(),
			},
		},
		structs.DeploymentDeleteRequestType: &structs.DeploymentDeleteRequest{
			Deployments: []string{"d1", "d2"}, WriteRequest: fullWriteRequest(),
		},
		structs.OneTimeTokenUpsertRequestType: &structs.OneTimeTokenUpsertRequest{
			OneTimeToken: &structs.OneTimeToken{OneTimeSecretID: "ott-1", AccessorID: "accessor-1", ExpiresAt: t0.Add(10 * time.Minute), CreateIndex: 7, ModifyIndex: 7},
			Expired:      []string{"ott-0"}, WriteRequest: fullWriteRequest(),
		},
		structs.OneTimeTokenDeleteRequestType: &structs.OneTimeTokenDeleteRequest{
			OneTimeSecretIDs: []string{"ott-1"}, WriteRequest: fullWriteRequest(),
		},
		structs.JobRegisterRequestType: &structs.JobRegisterRequest{
			Job: fullJob(), EnforceIndex: true, JobModifyIndex: 3, Eval: fullEval(),
			SubmitTime: t0.UnixNano(), Scaling: fullScalingEvent(), EvalPriority: 90, PreserveCounts: true, WriteRequest: fullWriteRequest(),
		},
		structs.JobDeregisterRequestType: &structs.JobDeregisterRequest{
			JobID: "edge-app", Purge: true, NoShutdownDelay: true, Eval: fullEval(), Now: t0.UnixNano(), EvalPriority: 70, WriteRequest: fullWriteRequest(),
		},
		structs.EvalUpdateRequestType: &structs.EvalUpdateRequest{
			Evals: []*structs.Evaluation{fullEval()}, EvalToken: "token", UpdatedAt: t0.UnixNano(), WriteRequest: fullWriteRequest(),
		},
		structs.EvalDeleteRequestType: &structs.EvalDeleteRequest{
			Evals: []string{"eval-1"}, Allocs: []string{"alloc-1"}, UserInitiated: true, WriteRequest: fullWriteRequest(),
		},
		structs.AutopilotConfigRequestType: &structs.AutopilotSetConfigRequest{
			Config: structs.AutopilotConfig{CleanupDeadServers: true, LastContactThreshold: time.Second, MaxTrailingLogs: 300,
				MinQuorum: 3, ServerStabilizationTime: 5 * time.Second, CreateIndex: 4, ModifyIndex: 9},
			CAS: true, WriteRequest: fullWriteRequest(),
		},
		structs.SchedulerConfigRequestType: &structs.SchedulerSetConfigRequest{
			Config: structs.SchedulerConfiguration{
				SchedulerAlgorithm: "binpack", MemoryOversubscriptionEnabled: true, RejectJobRegistration: true, PauseEvalBroker: true, NodeLimitForFeasibilityChecks: 7,
				PreemptionConfig: structs.PreemptionConfig{SystemSchedulerEnabled: true, SysBatchSchedulerEnabled: true, BatchSchedulerEnabled: true, ServiceSchedulerEnabled: true},
				CreateIndex:      4, ModifyIndex: 5,
			},
			CAS: true, WriteRequest: fullWriteRequest(),
		},
		structs.AllocUpdateRequestType: &structs.AllocUpdateRequest{
			NodeID: "node-a", Alloc: []*structs.Allocation{fullAlloc()}, Evals: []*structs.Evaluation{fullEval()},
			UpdatedAt: t0.UnixNano(), WriteRequest: fullWriteRequest(),
		},
		structs.AllocClientUpdateRequestType: &structs.AllocUpdateRequest{
			NodeID: "node-a", Alloc: []*structs.Allocation{fullAlloc()}, Evals: []*structs.Evaluation{fullEval()},
			UpdatedAt: t0.UnixNano(), WriteRequest: fullWriteRequest(),
		},
		structs.ApplyPlanResultsRequestType: &structs.ApplyPlanResultsRequest{
			Job: fullJob(), AllocsStopped: []*structs.Allocation{fullAlloc()}, AllocsUpdated: []*structs.Allocation{fullAlloc()},
			EvalID: "eval-1", Evals: []*structs.Evaluation{fullEval()}, UpdatedAt: t0.UnixNano(), WriteRequest: fullWriteRequest(),
			Deployment:        fullDeployment(),
			DeploymentUpdates: []*structs.DeploymentStatusUpdate{{DeploymentID: "dep-0", Status: "cancelled", StatusDescription: "newer"}},
		},
		structs.JobBatchDeregisterRequestType: &structs.JobBatchDeregisterRequest{
			Jobs: []structs.NamespacedID{{ID: "edge-app", Namespace: "fleet"}}, WriteRequest: fullWriteRequest(),
		},
		structs.AllocUpdateDesiredTransitionRequestType: &structs.AllocUpdateDesiredTransitionRequest{
			Allocs: map[string]*structs.DesiredTransition{"alloc-1": {Migrate: new(true), Reschedule: new(true), ForceReschedule: new(true), NoShutdownDelay: new(true)}},
			Evals:  []*structs.Evaluation{fullEval()}, WriteRequest: fullWriteRequest(),
		},
		structs.NodeBatchDeregisterRequestType: &structs.NodeBatchDeregisterRequest{
			Nodes: map[string]uint64{"node-a": 7}, WriteRequest: fullWriteRequest(),
		},
		structs.ACLPolicyUpsertRequestType: &structs.ACLPolicyUpsertRequest{
			Policies: []*structs.ACLPolicy{fullACLPolicy()}, WriteRequest: fullWriteRequest(),
		},
		structs.ACLPolicyDeleteRequestType: &structs.ACLPolicyDeleteRequest{
			Names: []string{"readers"}, WriteRequest: fullWriteRequest(),
		},
		structs.ACLTokenUpsertRequestType: &structs.ACLTokenUpsertRequest{
			Tokens: []*structs.ACLToken{fullACLToken()}, WriteRequest: fullWriteRequest(),
		},
		structs.ACLTokenDeleteRequestType: &structs.ACLTokenDeleteRequest{
			AccessorIDs: []string{"accessor-1"}, WriteRequest: fullWriteRequest(),
		},
		structs.ACLTokenBootstrapRequestType: &structs.ACLTokenBootstrapRequest{
			Token: fullACLToken(), BootstrapSecret: "9184ec35-65d4-9258-61e3-0c066d0a45c5", WriteRequest: fullWriteRequest(),
		},
		structs.NodeUpdateDrainRequestType: &structs.NodeUpdateDrainRequest{
			NodeID: "node-a", DrainStrategy: &structs.DrainStrategy{
				DrainSpec:     structs.DrainSpec{Deadline: time.Hour, IgnoreSystemJobs: true},
				ForceDeadline: t0.Add(time.Hour), StartedAt: t0,
			},
			MarkEligible: true, Meta: map[string]string{"reason": "kernel"}, Complete: true,
			NodeEvent: fullNode().Events[0], UpdatedAt: t0, WriteRequest: fullWriteRequest(),
		},
		structs.NodeUpdateEligibilityRequestType: &structs.NodeUpdateEligibilityRequest{
			NodeID: "node-a", Eligibility: structs.NodeSchedulingIneligible,
			NodeEvent: fullNode().Events[0], UpdatedAt: t0, WriteRequest: fullWriteRequest(),
		},
		structs.NodePurgeRequestType: &structs.NodePurgeRequest{
			NodeID: "node-a", Evals: []*structs.Evaluation{fullEval()}, WriteRequest: fullWriteRequest(),
		},
		structs.NamespaceUpsertRequestType: &structs.NamespaceUpsertRequest{
			Namespaces: []*structs.Namespace{{
				Name: "fleet", Description: "edge fleet", Quota: "q", Meta: map[string]string{"team": "edge"},
				CreateIndex: 3, ModifyIndex: 4,
			}},
			WriteRequest: fullWriteRequest(),
		},
		structs.NamespaceDeleteRequestType: &structs.NamespaceDeleteRequest{
			Namespaces: []string{"fleet"}, WriteRequest: fullWriteRequest(),
		},
		structs.JobStabilityRequestType: &structs.JobStabilityRequest{
			JobID: "web", JobVersion: 3, Stable: true, WriteRequest: fullWriteRequest(),
		},
		structs.ScalingEventRegisterRequestType: fullScalingEvent(),
		structs.NodePoolUpsertRequestType: &structs.NodePoolUpsertRequest{
			NodePools: []*structs.NodePool{{
				Name: "edge", Description: "LTE sites", Meta: map[string]string{"link": "lte"},
				SchedulerConfiguration: &structs.NodePoolSchedulerConfiguration{
					SchedulerAlgorithm: "spread", MemoryOversubscriptionEnabled: new(true),
				},
				Disconnect: &structs.NodePoolDisconnect{LostAfter: time.Hour, Replace: new(true), Reconcile: "keep_original",
					SiteOutage: fullSiteOutagePolicy()},
				CreateIndex: 5, ModifyIndex: 6,
			}},
			WriteRequest: fullWriteRequest(),
		},
		structs.NodePoolDeleteRequestType: &structs.NodePoolDeleteRequest{
			Names: []string{"edge"}, WriteRequest: fullWriteRequest(),
		},
		structs.DeploymentStatusUpdateRequestType: &structs.DeploymentStatusUpdateRequest{
			DeploymentUpdate: &structs.DeploymentStatusUpdate{DeploymentID: "dep-1", Status: "failed", StatusDescription: "bad"},
			Job:              fullJob(), Eval: fullEval(), StableVersion: ptr(uint64(3)), UpdatedAt: t0.UnixNano(),
			WriteRequest: fullWriteRequest(),
		},
		structs.DeploymentPromoteRequestType: &structs.ApplyDeploymentPromoteRequest{
			DeploymentPromoteRequest: structs.DeploymentPromoteRequest{
				DeploymentID: "dep-1", All: true, Groups: []string{"web"}, WriteRequest: fullWriteRequest(),
			},
			Eval: fullEval(), UpdatedAt: t0.UnixNano(),
		},
		structs.DeploymentAllocHealthRequestType: &structs.ApplyDeploymentAllocHealthRequest{
			DeploymentAllocHealthRequest: structs.DeploymentAllocHealthRequest{
				DeploymentID: "dep-1", HealthyAllocationIDs: []string{"a"}, UnhealthyAllocationIDs: []string{"b"},
				WriteRequest: fullWriteRequest(),
			},
			Timestamp:        t0,
			DeploymentUpdate: &structs.DeploymentStatusUpdate{DeploymentID: "dep-1", Status: "failed", StatusDescription: "bad"},
			Job:              fullJob(), Eval: fullEval(),
		},
		structs.ServiceRegistrationUpsertRequestType: &structs.ServiceRegistrationUpsertRequest{
			Services: []*structs.ServiceRegistration{{ID: "_nomad-task-a1-group-web-api-http", ServiceName: "api",
				Namespace: "default", NodeID: "node-1", Datacenter: "dc1", JobID: "web", AllocID: "a1",
				Tags: []string{"v1"}, Address: "10.0.0.1", Port: 8080, Status: structs.ServiceRegistrationStatusActive,
				CreateIndex: 3, ModifyIndex: 4}},
			NodeID: "node-1", WriteRequest: fullWriteRequest(),
		},
		structs.ServiceRegistrationDeleteByIDRequestType: &structs.ServiceRegistrationDeleteByIDRequest{
			ID: "_nomad-task-a1-group-web-api-http", NodeID: "node-1", WriteRequest: fullWriteRequest(),
		},
		structs.VarApplyStateRequestType: &structs.VarApplyStateRequest{
			Op: structs.VarOpSet, Now: t0.UnixNano(), Expired: true, LockDelayUntil: t0.UnixNano() + 1,
			Var: &structs.VariableEncrypted{
				VariableMetadata: structs.VariableMetadata{Namespace: "default", Path: "app/db",
					Lock:        &structs.VariableLock{ID: "lock-1", TTL: time.Minute, LockDelay: time.Second},
					CreateIndex: 3, CreateTime: t0.UnixNano(), ModifyIndex: 4, ModifyTime: t0.UnixNano()},
				VariableData:   structs.VariableData{Data: []byte("sealed"), KeyID: "k1"},
				LockDelayUntil: t0.UnixNano() + 2,
			},
		},
		structs.RootKeyMetaUpsertRequestType: &structs.KeyringUpdateRootKeyMetaRequest{
			RootKeyMeta: &structs.RootKeyMeta{KeyID: "k1", Algorithm: structs.EncryptionAlgorithmAES256GCM,
				CreateTime: t0.UnixNano(), CreateIndex: 5, ModifyIndex: 6, State: structs.RootKeyStateActive, PublishTime: t0.UnixNano()},
			Rekey: true, WriteRequest: fullWriteRequest(),
		},
		structs.RootKeyMetaDeleteRequestType: &structs.KeyringDeleteRootKeyRequest{KeyID: "k1", WriteRequest: fullWriteRequest()},
		structs.SiteOutageUpdateRequestType: &structs.SiteOutageUpdateRequest{
			Declare: []*structs.SiteOutage{{ID: "edge/dc1", Pool: "edge", Datacenter: "dc1", DeclaredAt: t0.UnixNano(),
				Disconnected: 6, Nodes: 8, Window: time.Minute, CreateIndex: 7, ModifyIndex: 8}},
			Clear:        []string{"edge/dc2"},
			NodeEvents:   map[string]*structs.NodeEvent{"node-1": fullNode().Events[0]},
			Evals:        []*structs.Evaluation{fullEval()},
			WriteRequest: fullWriteRequest(),
		},
	}
}

// Every raft entry decodes to exactly what was encoded, with the type byte
// first: the FSM on every server must rebuild the same state from the log,
// so a field msgpack drops would make servers disagree after a restart.
func TestEncode_RaftRequestsRoundTrip(t *testing.T) {
	reqs := raftRequests()
	for mt := structs.NodeRegisterRequestType; mt <= structs.ServiceRegistrationDeleteByIDRequestType; mt++ {
		t.Run(mt.String(), func(t *testing.T) {
			req, ok := reqs[mt]
			must.True(t, ok, must.Sprintf("no request for message type %s: add it to raftRequests", mt))
			mustFill(t, req)

			buf, err := structs.Encode(mt, req)
			must.NoError(t, err)
			must.Eq(t, byte(mt), buf[0])

			out := reflect.New(reflect.TypeOf(req).Elem()).Interface()
			must.NoError(t, structs.Decode(buf[1:], out))
			// The entry's buffer is raft's to reuse: nothing decoded may
			// point into it.
			for i := range buf {
				buf[i] = 0xc1
			}
			must.Eq(t, req, out)
		})
	}
}

// BenchmarkDecode_JobRegister is the FSM's decode of one job registration,
// every field set, as each server does for every entry.
//
//	go test -run '^$' -bench Decode_JobRegister -benchmem ./nomad/structs/
func BenchmarkDecode_JobRegister(b *testing.B) {
	buf, err := structs.Encode(structs.JobRegisterRequestType, raftRequests()[structs.JobRegisterRequestType])
	must.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		var out structs.JobRegisterRequest
		if err := structs.Decode(buf[1:], &out); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncode_JobRegister is the leader's encode of one job
// registration into a raft entry.
func BenchmarkEncode_JobRegister(b *testing.B) {
	req := raftRequests()[structs.JobRegisterRequestType]
	b.ReportAllocs()
	for b.Loop() {
		if _, err := structs.Encode(structs.JobRegisterRequestType, req); err != nil {
			b.Fatal(err)
		}
	}
}

// The node's secret travels to the servers and into the raft log (msgpack)
// but never out over the HTTP API (JSON): anyone who reads it can
// impersonate the node.
func TestNode_SecretIDInMsgpackButNotJSON(t *testing.T) {
	node := fullNode()

	buf, err := structs.Encode(structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: node})
	must.NoError(t, err)
	var got structs.NodeRegisterRequest
	must.NoError(t, structs.Decode(buf[1:], &got))
	must.Eq(t, node.SecretID, got.Node.SecretID)

	js, err := json.Marshal(node)
	must.NoError(t, err)
	must.StrNotContains(t, string(js), "SecretID")
	must.StrNotContains(t, string(js), node.SecretID)
	must.StrContains(t, string(js), `"ID":"node-a"`)
}

// Task config is free-form and opaque to the server; after a trip through
// RPC or raft its nested maps must be map[string]any with string keys (not
// map[any]any, and not []byte strings), or drivers fail to read their config.
func TestDecode_TaskConfigIsStringKeyedMaps(t *testing.T) {
	task := &structs.Task{Name: "web", Config: map[string]any{
		"image":  "redis:7",
		"args":   []string{"--port", "6379"},
		"labels": map[string]string{"team": "edge"},
		"mount":  []map[string]any{{"source": "/data", "options": map[string]any{"ro": true}}},
		"port":   6379,
	}}
	buf, err := structs.Encode(structs.JobRegisterRequestType, task)
	must.NoError(t, err)
	var got structs.Task
	must.NoError(t, structs.Decode(buf[1:], &got))

	must.Eq(t, map[string]any{
		"image":  "redis:7",
		"args":   []any{"--port", "6379"},
		"labels": map[string]any{"team": "edge"},
		"mount":  []any{map[string]any{"source": "/data", "options": map[string]any{"ro": true}}},
		"port":   int64(6379),
	}, got.Config)
}

// MessageType names appear in logs and errors; an unknown value must still
// print as something recognisable rather than panic.
func TestMessageType_String(t *testing.T) {
	must.Eq(t, "NodeRegister", structs.NodeRegisterRequestType.String())
	must.Eq(t, "ApplyPlanResults", structs.ApplyPlanResultsRequestType.String())
	must.Eq(t, "JobBatchDeregister", structs.JobBatchDeregisterRequestType.String())
	must.Eq(t, "NodeBatchDeregister", structs.NodeBatchDeregisterRequestType.String())
	must.Eq(t, "MessageType(200)", structs.MessageType(200).String())
}

func fullACLPolicy() *structs.ACLPolicy {
	return &structs.ACLPolicy{Name: "readers", Description: "read jobs", Rules: `namespace "default" { policy = "read" }`,
		JobACL: &structs.JobACL{Namespace: "default", JobID: "web", Group: "cache", Task: "redis"}, CreateIndex: 3, ModifyIndex: 4}
}

func fullACLToken() *structs.ACLToken {
	expires := t0.Add(time.Hour)
	return &structs.ACLToken{AccessorID: "accessor-1", SecretID: "secret-1", Name: "ci", Type: structs.ACLClientToken,
		Policies: []string{"readers"}, Global: true, CreateTime: t0, ExpirationTime: &expires, ExpirationTTL: time.Hour,
		CreateIndex: 5, ModifyIndex: 6}
}

func fullScalingEvent() *structs.ScalingEventRequest {
	count, eval := int64(3), "eval-1"
	return &structs.ScalingEventRequest{Namespace: "default", JobID: "web", TaskGroup: "web",
		ScalingEvent: &structs.ScalingEvent{Time: uint64(t0.UnixNano()), Count: &count, PreviousCount: 1,
			Message: "busy", Error: true, Meta: map[string]any{"by": "autoscaler"}, EvalID: &eval, CreateIndex: 7}}
}
