package nomad

import (
	"fmt"

	"github.com/hashicorp/raft"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// fsmApply applies the body of one raft entry committed at index and
// returns what Apply hands back to the writer (nil or an error).
type fsmApply func(f *nomadFSM, t structs.MessageType, body []byte, index uint64) any

// decoded is the table entry of an apply function of one request type: it
// decodes the body into a fresh request first.
func decoded[R any](apply func(f *nomadFSM, req *R, index uint64) error) fsmApply {
	return func(f *nomadFSM, t structs.MessageType, body []byte, index uint64) any {
		var req R
		if err := structs.Decode(body, &req); err != nil {
			return fmt.Errorf("decoding %s: %w", t, err)
		}
		if err := apply(f, &req, index); err != nil {
			return err
		}
		return nil
	}
}

// fsmAppliers is the FSM's dispatch: the apply function of every message
// type it knows. A type missing here is refused by apply.
var fsmAppliers = map[structs.MessageType]fsmApply{
	structs.NodeRegisterRequestType:                 decoded((*nomadFSM).applyNodeRegister),
	structs.NodeDeregisterRequestType:               decoded((*nomadFSM).applyNodeDeregister),
	structs.NodeUpdateStatusRequestType:             decoded((*nomadFSM).applyNodeUpdateStatus),
	structs.NodeBatchUpdateStatusRequestType:        decoded((*nomadFSM).applyNodeBatchUpdateStatus),
	structs.NodeBatchDeregisterRequestType:          decoded((*nomadFSM).applyNodeBatchDeregister),
	structs.NodeUpdateDrainRequestType:              decoded((*nomadFSM).applyNodeUpdateDrain),
	structs.NodeUpdateEligibilityRequestType:        decoded((*nomadFSM).applyNodeUpdateEligibility),
	structs.NodePurgeRequestType:                    decoded((*nomadFSM).applyNodePurge),
	structs.JobRegisterRequestType:                  decoded((*nomadFSM).applyJobRegister),
	structs.JobDeregisterRequestType:                decoded((*nomadFSM).applyJobDeregister),
	structs.JobBatchDeregisterRequestType:           decoded((*nomadFSM).applyJobBatchDeregister),
	structs.JobStabilityRequestType:                 decoded((*nomadFSM).applyJobStability),
	structs.ScalingEventRegisterRequestType:         decoded((*nomadFSM).applyScalingEvent),
	structs.EvalUpdateRequestType:                   decoded((*nomadFSM).applyEvalUpdate),
	structs.EvalDeleteRequestType:                   decoded((*nomadFSM).applyEvalDelete),
	structs.AllocClientUpdateRequestType:            decoded((*nomadFSM).applyAllocClientUpdate),
	structs.AllocUpdateDesiredTransitionRequestType: decoded((*nomadFSM).applyAllocDesiredTransitions),
	structs.ApplyPlanResultsRequestType:             decoded((*nomadFSM).applyPlanResults),
	structs.DeploymentStatusUpdateRequestType:       decoded((*nomadFSM).applyDeploymentStatusUpdate),
	structs.DeploymentPromoteRequestType:            decoded((*nomadFSM).applyDeploymentPromote),
	structs.DeploymentAllocHealthRequestType:        decoded((*nomadFSM).applyDeploymentAllocHealth),
	structs.DeploymentDeleteRequestType:             decoded((*nomadFSM).applyDeploymentDelete),
	structs.ACLPolicyUpsertRequestType:              decoded((*nomadFSM).applyACLPolicyUpsert),
	structs.ACLPolicyDeleteRequestType:              decoded((*nomadFSM).applyACLPolicyDelete),
	structs.ACLTokenUpsertRequestType:               decoded((*nomadFSM).applyACLTokenUpsert),
	structs.ACLTokenDeleteRequestType:               decoded((*nomadFSM).applyACLTokenDelete),
	structs.ACLTokenBootstrapRequestType:            decoded((*nomadFSM).applyACLTokenBootstrap),
	structs.OneTimeTokenUpsertRequestType:           decoded((*nomadFSM).applyOneTimeTokenUpsert),
	structs.OneTimeTokenDeleteRequestType:           decoded((*nomadFSM).applyOneTimeTokenDelete),
	structs.NamespaceUpsertRequestType:              decoded((*nomadFSM).applyNamespaceUpsert),
	structs.NamespaceDeleteRequestType:              decoded((*nomadFSM).applyNamespaceDelete),
	structs.NodePoolUpsertRequestType:               decoded((*nomadFSM).applyNodePoolUpsert),
	structs.NodePoolDeleteRequestType:               decoded((*nomadFSM).applyNodePoolDelete),
	structs.SiteOutageUpdateRequestType:             decoded((*nomadFSM).applySiteOutageUpdate),
	structs.SchedulerConfigRequestType:              applySchedulerConfig,
	structs.VarApplyStateRequestType:                applyVarState,
	structs.RootKeyMetaUpsertRequestType:            decoded((*nomadFSM).applyRootKeyMetaUpsert),

	// The service catalog (issue 20).
	structs.ServiceRegistrationUpsertRequestType:     decoded((*nomadFSM).applyServiceRegistrationUpsert),
	structs.ServiceRegistrationDeleteByIDRequestType: decoded((*nomadFSM).applyServiceRegistrationDeleteByID),
	structs.AutopilotConfigRequestType:               applyAutopilotConfig,

	// Events a client reports about its node (issue 24).
	structs.NodeEventsEmitRequestType: decoded((*nomadFSM).applyNodeEventsEmit),

	// Removing a root key (issue 21).
	structs.RootKeyMetaDeleteRequestType: decoded((*nomadFSM).applyRootKeyMetaDelete),

	// The servers' shared identity (issue 26).
	structs.ServerIdentitySetRequestType: decoded((*nomadFSM).applyServerIdentitySet),

	// The cluster CA of automatic mutual TLS (issue 26).
	structs.TLSCAUpsertRequestType: decoded((*nomadFSM).applyTLSCAUpsert),
}

func (f *nomadFSM) apply(t structs.MessageType, l *raft.Log) any {
	apply, ok := fsmAppliers[t]
	if !ok {
		// An unknown type means a newer server wrote this entry: refusing
		// to go on is safer than silently diverging from the other servers.
		panic(fmt.Errorf("raft entry %d has unknown message type %d", l.Index, t))
	}
	return apply(f, t, l.Data[1:], l.Index)
}
