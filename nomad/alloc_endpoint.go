package nomad

import (
	"sort"

	"github.com/hashicorp/go-memdb"
	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// Alloc is the Alloc.* RPC endpoint.
type Alloc struct {
	srv *Server
}

// List returns allocations, optionally by ID prefix.
func (a *Alloc) List(args *structs.AllocListRequest, reply *structs.AllocListResponse) error {
	return a.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		iter, err := st.AllocsByIDPrefix(ws, args.RequestNamespace(), args.Prefix)
		if err != nil {
			return 0, err
		}
		reply.Allocations = []*structs.AllocListStub{}
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			reply.Allocations = append(reply.Allocations, raw.(*structs.Allocation).Stub())
		}
		sort.Slice(reply.Allocations, func(i, j int) bool {
			return reply.Allocations[i].CreateIndex > reply.Allocations[j].CreateIndex
		})
		return st.Index(state.TableAllocs)
	})
}

// GetAlloc returns one allocation.
func (a *Alloc) GetAlloc(args *structs.AllocSpecificRequest, reply *structs.SingleAllocResponse) error {
	return a.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		alloc, err := st.AllocByID(ws, args.AllocID)
		if err != nil {
			return 0, err
		}
		reply.Alloc = alloc
		if alloc != nil {
			return alloc.ModifyIndex, nil
		}
		return st.Index(state.TableAllocs)
	})
}

// GetAllocs returns allocations by ID: the client's pull of what changed.
// It waits for MinQueryIndex so the client never reads older state than
// the index that told it something changed.
func (a *Alloc) GetAllocs(args *structs.AllocsGetRequest, reply *structs.AllocsGetResponse) error {
	return a.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		reply.Allocs = make([]*structs.Allocation, 0, len(args.AllocIDs))
		var index uint64
		for _, id := range args.AllocIDs {
			alloc, err := st.AllocByID(ws, id)
			if err != nil {
				return 0, err
			}
			if alloc == nil {
				continue
			}
			reply.Allocs = append(reply.Allocs, alloc)
			index = max(index, alloc.ModifyIndex)
		}
		if index == 0 {
			return st.Index(state.TableAllocs)
		}
		return index, nil
	})
}
