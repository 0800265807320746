package agent

import (
	"net/http"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// namespaceBody is what PUT /v1/namespace accepts: upstream's fields that
// we implement. A field upstream has and we do not (capabilities, node
// pool, vault, consul) is refused by name when set, as decodeBody does
// for every unknown field.
type namespaceBody struct {
	Name        string
	Description string
	Quota       string
	Meta        map[string]string
	CreateIndex uint64
	ModifyIndex uint64
}

// namespaceList is GET /v1/namespaces.
func (s *HTTPServer) namespaceList(w http.ResponseWriter, r *http.Request) (any, error) {
	args := &structs.NamespaceListRequest{}
	var reply structs.NamespaceListResponse
	c := readCall{"Namespace.ListNamespaces", &args.QueryOptions, args, &reply, &reply.QueryMeta}
	return listQuery(s, w, r, c, func() []*structs.Namespace { return reply.Namespaces }, byID(func(n *structs.Namespace) string { return n.Name }))
}

// namespaceGet is GET /v1/namespace/{name}.
func (s *HTTPServer) namespaceGet(w http.ResponseWriter, r *http.Request) (any, error) {
	args := &structs.NamespaceSpecificRequest{Name: r.PathValue("name")}
	var reply structs.SingleNamespaceResponse
	if err := s.query(w, r, readCall{"Namespace.GetNamespace", &args.QueryOptions, args, &reply, &reply.QueryMeta}); err != nil {
		return nil, err
	}
	if reply.Namespace == nil {
		return nil, codedErrorf(http.StatusNotFound, "Namespace not found")
	}
	return reply.Namespace, nil
}

// namespacePut is PUT or POST /v1/namespace (the name in the body) and
// /v1/namespace/{name}: create or update.
func (s *HTTPServer) namespacePut(w http.ResponseWriter, r *http.Request) (any, error) {
	var body namespaceBody
	if err := decodeBody(r, &body); err != nil {
		return nil, err
	}
	name := r.PathValue("name")
	switch {
	case name == "" && body.Name == "":
		return nil, codedErrorf(http.StatusBadRequest, "Namespace name is missing: set Name in the body or put it in the path")
	case name == "":
		name = body.Name
	case body.Name != "" && body.Name != name:
		return nil, codedErrorf(http.StatusBadRequest, "Namespace name %q does not match the path: %q", body.Name, name)
	}
	args := &structs.NamespaceUpsertRequest{
		Namespaces: []*structs.Namespace{{
			Name: name, Description: body.Description, Quota: body.Quota, Meta: body.Meta,
		}},
		WriteRequest: writeRequest(r),
	}
	var reply structs.GenericResponse
	if err := s.call(r, "Namespace.UpsertNamespaces", args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return nil, nil
}

// namespaceDelete is DELETE /v1/namespace/{name}.
func (s *HTTPServer) namespaceDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	args := &structs.NamespaceDeleteRequest{Namespaces: []string{r.PathValue("name")}, WriteRequest: writeRequest(r)}
	var reply structs.GenericResponse
	if err := s.call(r, "Namespace.DeleteNamespaces", args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return nil, nil
}
