package agent

import (
	"net/http"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// allocList handles GET /v1/allocations (?prefix= narrows by ID prefix,
// which is how the CLI resolves a short ID).
func (s *HTTPServer) allocList(w http.ResponseWriter, r *http.Request) (any, error) {
	var args structs.AllocListRequest
	var reply structs.AllocListResponse
	c := readCall{Method: "Alloc.List", Opts: &args.QueryOptions, Args: &args, Reply: &reply, Meta: &reply.QueryMeta}
	items, err := allocStubs(r, func() []*structs.AllocListStub { return reply.Allocations })
	if err != nil {
		return nil, err
	}
	return listQuery(s, w, r, c, items, allocOrder)
}

// allocGet handles GET /v1/allocation/{id}. The ID must be exact, as
// upstream's: prefixes are resolved through the list.
func (s *HTTPServer) allocGet(w http.ResponseWriter, r *http.Request) (any, error) {
	args := structs.AllocSpecificRequest{AllocID: r.PathValue("id")}
	var reply structs.SingleAllocResponse
	if err := s.query(w, r, readCall{Method: "Alloc.GetAlloc", Opts: &args.QueryOptions, Args: &args, Reply: &reply, Meta: &reply.QueryMeta}); err != nil {
		return nil, err
	}
	if reply.Alloc == nil {
		return nil, codedErrorf(http.StatusNotFound, "alloc not found")
	}
	return allocWithPolicy(reply.Alloc), nil
}

// allocJSON is a full allocation as the API shows it: ours plus upstream's
// legacy resource fields (legacyAlloc).
type allocJSON struct {
	*structs.Allocation
	legacyAlloc
}

func viewAlloc(a *structs.Allocation) allocJSON {
	return allocJSON{Allocation: a, legacyAlloc: legacyAllocResources(a)}
}

// viewAllocs is viewAlloc over a list, never null.
func viewAllocs(allocs []*structs.Allocation) []allocJSON {
	out := make([]allocJSON, 0, len(allocs))
	for _, a := range allocs {
		out = append(out, viewAlloc(a))
	}
	return out
}

// allocView is an allocation as GET /v1/allocation/{id} shows it: with the
// disconnect policy that applies to it and where that came from, resolved
// by the server (structs.ResolveDisconnect). Not in upstream's API; its
// client library ignores the field.
type allocView struct {
	allocJSON
	DisconnectPolicy *structs.EffectiveDisconnect
}

func allocWithPolicy(a *structs.Allocation) allocView {
	p := a.DisconnectPolicy()
	p.Summary = p.String()
	return allocView{allocJSON: viewAlloc(a), DisconnectPolicy: &p}
}

// allocStop handles PUT|POST /v1/allocation/{id}/stop: the allocation is
// stopped and replaced (nomad alloc stop).
func (s *HTTPServer) allocStop(w http.ResponseWriter, r *http.Request) (any, error) {
	noDelay, err := boolParam(r, "no_shutdown_delay")
	if err != nil {
		return nil, err
	}
	args := &structs.AllocStopRequest{AllocID: r.PathValue("id"), NoShutdownDelay: noDelay, WriteRequest: writeRequest(r)}
	var reply structs.AllocStopResponse
	if err := s.call(r, "Alloc.Stop", args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return reply, nil
}
