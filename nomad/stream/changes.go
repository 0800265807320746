package stream

import (
	"github.com/hashicorp/go-memdb"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// msgTypeEvents names the event type of every change a raft entry of a
// message type makes, whatever the table, as upstream does: the
// evaluation a job registration writes is an Evaluation event of type
// JobRegistered.
var msgTypeEvents = map[structs.MessageType]string{
	structs.NodeRegisterRequestType:                 TypeNodeRegistration,
	structs.NodeDeregisterRequestType:               TypeNodeDeregistration,
	structs.NodeBatchDeregisterRequestType:          TypeNodeDeregistration,
	structs.NodePurgeRequestType:                    TypeNodeDeregistration,
	structs.NodeUpdateStatusRequestType:             TypeNodeEvent,
	structs.NodeBatchUpdateStatusRequestType:        TypeNodeEvent,
	structs.NodeUpdateDrainRequestType:              TypeNodeDrain,
	structs.NodeUpdateEligibilityRequestType:        TypeNodeEligibility,
	structs.JobRegisterRequestType:                  TypeJobRegistered,
	structs.JobDeregisterRequestType:                TypeJobDeregistered,
	structs.JobBatchDeregisterRequestType:           TypeJobBatchDeregistered,
	structs.EvalUpdateRequestType:                   TypeEvalUpdated,
	structs.AllocClientUpdateRequestType:            TypeAllocationUpdated,
	structs.AllocUpdateRequestType:                  TypeAllocationUpdated,
	structs.AllocUpdateDesiredTransitionRequestType: TypeAllocationUpdateDesiredStatus,
	structs.ApplyPlanResultsRequestType:             TypePlanResult,
	structs.DeploymentStatusUpdateRequestType:       TypeDeploymentUpdate,
	structs.DeploymentPromoteRequestType:            TypeDeploymentPromotion,
	structs.DeploymentAllocHealthRequestType:        TypeDeploymentAllocHealth,

	structs.ServiceRegistrationUpsertRequestType:     TypeServiceRegistration,
	structs.ServiceRegistrationDeleteByIDRequestType: TypeServiceDeregistration,

	// Upserted or deleted, as the change says (fromChange).
	structs.VarApplyStateRequestType: TypeVariableUpserted,
}

// FromEntry turns the committed changes of one raft entry into its batch
// of events. Garbage collection (evaluation deletes) and ACL writes make no
// events, as upstream; of deletions, only nodes and jobs are told.
func FromEntry(msgType structs.MessageType, index uint64, changes memdb.Changes) Events {
	typ, ok := msgTypeEvents[msgType]
	if !ok {
		return Events{Index: index}
	}
	return fromChanges(typ, index, changes)
}

// FromWrite turns the changes of a write made outside raft (tests write to
// a server's store directly) into events with each table's plain type.
func FromWrite(index uint64, changes memdb.Changes) Events {
	return fromChanges("", index, changes)
}

func fromChanges(typ string, index uint64, changes memdb.Changes) Events {
	out := Events{Index: index}
	// An entry of several transactions may write an object twice (a job,
	// then its status): it is told once, as it ended up, where it first
	// changed.
	at := map[[3]string]int{}
	for _, c := range changes {
		e, ok := fromChange(typ, c)
		if !ok {
			continue
		}
		e.Index = index
		k := [3]string{string(e.Topic), e.Namespace, e.Key}
		if i, seen := at[k]; seen {
			out.Events[i] = e
			continue
		}
		at[k] = len(out.Events)
		out.Events = append(out.Events, e)
	}
	return out
}

func fromChange(typ string, c memdb.Change) (Event, bool) {
	obj, deleted := c.After, c.Deleted()
	if deleted {
		obj = c.Before
	}
	switch o := obj.(type) {
	case *structs.Node:
		if typ == "" {
			typ = pick(deleted, TypeNodeDeregistration, TypeNodeRegistration)
		}
		return Event{Topic: TopicNode, Type: typ, Key: o.ID, Payload: Payload{Node: o.Sanitize()}}, true
	case *structs.Job:
		if typ == "" {
			typ = pick(deleted || o.Stop, TypeJobDeregistered, TypeJobRegistered)
		}
		return Event{Topic: TopicJob, Type: typ, Key: o.ID, Namespace: o.Namespace,
			Payload: Payload{Job: o, Deleted: deleted}}, true
	case *structs.VariableEncrypted:
		meta := o.VariableMetadata
		return Event{Topic: TopicVariables, Type: pick(deleted, TypeVariableDeleted, TypeVariableUpserted),
			Key: o.Path, Namespace: o.Namespace, Payload: Payload{Variable: &meta}}, true
	case *structs.ServiceRegistration:
		return Event{Topic: TopicService, Type: pick(deleted, TypeServiceDeregistration, TypeServiceRegistration),
			Key: o.ID, Namespace: o.Namespace, FilterKeys: []string{o.JobID, o.ServiceName},
			Payload: Payload{Service: o}}, true
	}
	if deleted {
		return Event{}, false
	}
	switch o := obj.(type) {
	case *structs.Allocation:
		if typ == "" {
			typ = TypeAllocationUpdated
		}
		return Event{Topic: TopicAllocation, Type: typ, Key: o.ID, Namespace: o.Namespace,
			FilterKeys: []string{o.JobID}, Payload: Payload{Allocation: withoutJob(o)}}, true
	case *structs.Evaluation:
		if typ == "" {
			typ = TypeEvalUpdated
		}
		keys := []string{o.JobID}
		if o.DeploymentID != "" {
			keys = append(keys, o.DeploymentID)
		}
		return Event{Topic: TopicEvaluation, Type: typ, Key: o.ID, Namespace: o.Namespace,
			FilterKeys: keys, Payload: Payload{Evaluation: o}}, true
	case *structs.Deployment:
		if typ == "" {
			typ = TypeDeploymentUpdate
		}
		return Event{Topic: TopicDeployment, Type: typ, Key: o.ID, Namespace: o.Namespace,
			FilterKeys: []string{o.JobID}, Payload: Payload{Deployment: o}}, true
	}
	return Event{}, false
}

func pick(cond bool, yes, no string) string {
	if cond {
		return yes
	}
	return no
}

// withoutJob is a shallow copy of a without its job; what it shares with
// a is immutable.
func withoutJob(a *structs.Allocation) *structs.Allocation {
	c := *a
	c.Job = nil
	return &c
}
