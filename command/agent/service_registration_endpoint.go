package agent

import (
	"net/http"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// includeUnknownParam is our query parameter of GET /v1/service/{name}
// that also returns the instances whose allocation is unknown (its node
// cut off); upstream has no such instances to leave out.
const includeUnknownParam = "include_unknown"

// serviceRoutes registers the catalog's routes.
func (s *HTTPServer) serviceRoutes(handle func(string, handlerFunc)) {
	handle("GET /v1/services", s.serviceList)
	handle("GET /v1/service/{name}", s.serviceGet)
	handle("DELETE /v1/service/{name}/{id}", s.serviceDelete)
	handle("GET /v1/allocation/{id}/services", s.allocServices)
	handle("GET /v1/job/{id}/services", s.jobServices)
}

// serviceList is GET /v1/services: per namespace (or "*"), each service
// name with its tags.
func (s *HTTPServer) serviceList(w http.ResponseWriter, r *http.Request) (any, error) {
	args := &structs.ServiceRegistrationListRequest{}
	var reply structs.ServiceRegistrationListResponse
	c := readCall{"ServiceRegistration.List", &args.QueryOptions, args, &reply, &reply.QueryMeta}
	return listQuery(s, w, r, c, func() []*structs.ServiceRegistrationListStub { return reply.Services },
		byID(func(n *structs.ServiceRegistrationListStub) string { return n.Namespace }))
}

// serviceGet is GET /v1/service/{name}: the service's instances, with
// upstream's filter, pagination and choose=<n>|<key>, and our
// include_unknown. choose applies to what the filter kept.
func (s *HTTPServer) serviceGet(w http.ResponseWriter, r *http.Request) (any, error) {
	includeUnknown := false
	if r.URL.Query().Has(includeUnknownParam) {
		b, err := boolParam(r, includeUnknownParam)
		if err != nil {
			return nil, err
		}
		includeUnknown = b || r.URL.Query().Get(includeUnknownParam) == ""
	}
	args := &structs.ServiceRegistrationByNameRequest{ServiceName: r.PathValue("name"), IncludeUnknown: includeUnknown}
	var reply structs.ServiceRegistrationByNameResponse
	c := readCall{"ServiceRegistration.GetService", &args.QueryOptions, args, &reply, &reply.QueryMeta}
	out, err := listQuery(s, w, r, c, func() []*structs.ServiceRegistration { return reply.Services }, registrationOrder)
	if err != nil {
		return nil, err
	}
	choose := r.URL.Query().Get("choose")
	if choose == "" {
		return out, nil
	}
	return structs.ChooseServices(out.([]*structs.ServiceRegistration), choose)
}

var registrationOrder = byID(func(r *structs.ServiceRegistration) string { return r.ID })

// serviceDelete is DELETE /v1/service/{name}/{id}.
func (s *HTTPServer) serviceDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	args := &structs.ServiceRegistrationDeleteByIDRequest{ID: r.PathValue("id"), WriteRequest: writeRequest(r)}
	var reply structs.ServiceRegistrationDeleteByIDResponse
	if err := s.call(r, "ServiceRegistration.DeleteByID", args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return nil, nil
}

// allocServices is GET /v1/allocation/{id}/services: every instance of
// the allocation, unknown ones included (they carry their Status).
func (s *HTTPServer) allocServices(w http.ResponseWriter, r *http.Request) (any, error) {
	return s.registrationsOf(w, r, "ServiceRegistration.ListByAlloc", "alloc not found")
}

// jobServices is GET /v1/job/{id}/services.
func (s *HTTPServer) jobServices(w http.ResponseWriter, r *http.Request) (any, error) {
	return s.registrationsOf(w, r, "ServiceRegistration.ListByJob", "job not found")
}

func (s *HTTPServer) registrationsOf(w http.ResponseWriter, r *http.Request, method, notFound string) (any, error) {
	args := &structs.ServiceRegistrationsRequest{ID: r.PathValue("id")}
	var reply structs.ServiceRegistrationsResponse
	if err := s.query(w, r, readCall{method, &args.QueryOptions, args, &reply, &reply.QueryMeta}); err != nil {
		return nil, err
	}
	if reply.Services == nil {
		return nil, codedErrorf(http.StatusNotFound, "%s", notFound)
	}
	return reply.Services, nil
}
