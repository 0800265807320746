package stream

import (
	"testing"

	"github.com/hashicorp/go-memdb"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// TestFromEntry_ServiceEvents checks the Service topic as upstream names
// it: a written or re-marked instance is a ServiceRegistration event, a
// removed one a ServiceDeregistration, whichever entry made the change
// (an allocation update marks and removes instances too), keyed by the
// instance's ID and filterable by job and service name. A consumer of the
// stream sees an instance turn unknown when its allocation does.
func TestFromEntry_ServiceEvents(t *testing.T) {
	reg := &structs.ServiceRegistration{ID: "_nomad-task-a1-group-web-api-http", ServiceName: "api",
		Namespace: "default", JobID: "web", AllocID: "a1", Status: structs.ServiceRegistrationStatusActive}
	marked := reg.Copy()
	marked.Status = structs.ServiceRegistrationStatusUnknown

	up := FromEntry(structs.ServiceRegistrationUpsertRequestType, 5, memdb.Changes{{Table: "service_registrations", After: reg}})
	must.Eq(t, []Event{{Topic: TopicService, Type: TypeServiceRegistration, Key: reg.ID, Namespace: "default",
		FilterKeys: []string{"web", "api"}, Index: 5, Payload: Payload{Service: reg}}}, up.Events)

	plan := FromEntry(structs.ApplyPlanResultsRequestType, 6, memdb.Changes{{Table: "service_registrations", Before: reg, After: marked}})
	must.Eq(t, TypeServiceRegistration, plan.Events[0].Type)
	must.Eq(t, structs.ServiceRegistrationStatusUnknown, plan.Events[0].Payload.Service.Status)

	lost := FromEntry(structs.ApplyPlanResultsRequestType, 7, memdb.Changes{{Table: "service_registrations", Before: marked}})
	must.Eq(t, TypeServiceDeregistration, lost.Events[0].Type)
	deleted := FromEntry(structs.ServiceRegistrationDeleteByIDRequestType, 8, memdb.Changes{{Table: "service_registrations", Before: reg}})
	must.Eq(t, TypeServiceDeregistration, deleted.Events[0].Type)
	must.SliceContains(t, Topics, TopicService)
}
