package stream

import "github.com/nomad-edge/nomad/nomad/structs"

// Topic is the kind of object an event is about.
type Topic string

// The topics, as upstream names them. TopicAll in a subscription means
// every topic; no event carries it.
const (
	TopicAll        Topic = "*"
	TopicJob        Topic = "Job"
	TopicAllocation Topic = "Allocation"
	TopicNode       Topic = "Node"
	TopicEvaluation Topic = "Evaluation"
	TopicDeployment Topic = "Deployment"
	TopicService    Topic = "Service"
	TopicVariables  Topic = "Variables"
)

// Topics lists the topics a subscription may name, TopicAll aside.
var Topics = []Topic{TopicJob, TopicAllocation, TopicNode, TopicEvaluation, TopicDeployment, TopicService, TopicVariables}

// Event types, as upstream names them, for what this server produces.
const (
	TypeNodeRegistration   = "NodeRegistration"
	TypeNodeDeregistration = "NodeDeregistration"
	TypeNodeEligibility    = "NodeEligibility"
	TypeNodeDrain          = "NodeDrain"
	// TypeNodeEvent is a node status change (disconnected, ready, down)
	// with the node event that says why; upstream spells it so.
	TypeNodeEvent = "NodeStreamEvent"

	TypeJobRegistered        = "JobRegistered"
	TypeJobDeregistered      = "JobDeregistered"
	TypeJobBatchDeregistered = "JobBatchDeregistered"

	TypeEvalUpdated = "EvaluationUpdated"

	TypeAllocationUpdated             = "AllocationUpdated"
	TypeAllocationUpdateDesiredStatus = "AllocationUpdateDesiredStatus"
	TypePlanResult                    = "PlanResult"

	TypeDeploymentUpdate      = "DeploymentStatusUpdate"
	TypeDeploymentPromotion   = "DeploymentPromotion"
	TypeDeploymentAllocHealth = "DeploymentAllocHealth"

	// A service instance written or changed (its status), and removed
	// (deleted, or its allocation stopped or collected), whatever entry
	// did it.
	TypeServiceRegistration   = "ServiceRegistration"
	TypeServiceDeregistration = "ServiceDeregistration"

	// A variable written (set, a lock acquired, renewed or released) and
	// deleted. The payload is its metadata, never its items.
	TypeVariableUpserted = "VariableUpserted"
	TypeVariableDeleted  = "VariableDeleted"
)

// Event is one changed object. Key is its ID; FilterKeys are other IDs a
// subscription may select it by (an allocation's or evaluation's job).
// Namespace is empty for objects that have none (nodes), which every
// namespace filter lets through.
type Event struct {
	Topic      Topic
	Type       string
	Key        string
	Namespace  string
	FilterKeys []string
	Index      uint64
	Payload    Payload
}

// Payload holds the changed object under its kind's name, the JSON shape
// upstream's clients decode ({"Node": {...}}). Objects are the store's own,
// shared and immutable; a node is the sanitized copy, without its secret,
// and an allocation has no Job (as upstream: it would repeat the job in
// every allocation event).
type Payload struct {
	Node       *structs.Node       `json:",omitempty"`
	Job        *structs.Job        `json:",omitempty"`
	Allocation *structs.Allocation `json:",omitempty"`
	Evaluation *structs.Evaluation `json:",omitempty"`
	Deployment *structs.Deployment `json:",omitempty"`
	// Service is a service instance, as upstream's payload names it.
	Service *structs.ServiceRegistration `json:",omitempty"`
	// Variable is a variable's metadata (path, lock, indexes), as
	// upstream's payload names it; the items are not in any event.
	Variable *structs.VariableMetadata `json:",omitempty"`
	// Deleted marks a job removed from the state (a purge), not only
	// stopped.
	Deleted bool `json:",omitempty"`
}

// Events is the batch of events of one raft entry, at its index: one line
// of the HTTP stream.
type Events struct {
	Index  uint64
	Events []Event
}
