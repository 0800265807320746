package stream

import (
	"fmt"

	"github.com/nomad-edge/nomad/acl"
)

// Missing returns what a lacks to stream req's topics, or "" when it may.
// Each topic asks what its read endpoints ask: node read for Node,
// variables list on every path (path "*") of the namespace for Variables,
// read-job in the namespace for the others; every topic at once (TopicAll,
// or no topic) asks for a management token, as upstream. A nil ACL (ACLs
// off) may do anything.
func Missing(a *acl.ACL, req SubscribeRequest) string {
	if len(req.Topics) == 0 || req.Topics[TopicAll] != nil {
		if !a.IsManagement() {
			return "a management token (the * topic, or no topic, streams every topic)"
		}
		return ""
	}
	ns := req.Namespace
	if ns == "" {
		ns = "default"
	}
	for topic := range req.Topics {
		switch {
		case topic == TopicNode:
			if !a.AllowNodeRead() {
				return "node read"
			}
		case topic == TopicVariables:
			// Its events name every path of the namespace.
			if !a.AllowVariableOperation(ns, "*", acl.VariablesCapabilityList) {
				return fmt.Sprintf("variables list on path \"*\" in namespace %q", ns)
			}
		case !a.AllowNamespaceOperation(ns, acl.NamespaceCapabilityReadJob):
			return fmt.Sprintf("%s in namespace %q", acl.NamespaceCapabilityReadJob, ns)
		}
	}
	return ""
}
