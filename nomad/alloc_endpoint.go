package nomad

import (
	"errors"
	"fmt"
	"sort"

	"github.com/hashicorp/go-memdb"

	"github.com/nomad-edge/nomad/acl"
	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// Alloc is the Alloc.* RPC endpoint.
type Alloc struct {
	srv *Server
}

// List returns allocations, optionally by ID prefix.
func (a *Alloc) List(args *structs.AllocListRequest, reply *structs.AllocListResponse) error {
	if done, err := a.srv.forwardQuery("Alloc.List", &args.QueryOptions, args, reply); done {
		return err
	}
	allowed, err := a.srv.authorizeList(args.AuthToken, args.RequestNamespace(), acl.NamespaceCapabilityReadJob)
	if err != nil {
		return err
	}
	return a.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		iter, err := st.AllocsByIDPrefix(ws, args.RequestNamespace(), args.Prefix)
		if err != nil {
			return 0, err
		}
		reply.Allocations = []*structs.AllocListStub{}
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			if alloc := raw.(*structs.Allocation); allowed(alloc.Namespace) {
				reply.Allocations = append(reply.Allocations, alloc.Stub())
			}
		}
		sort.Slice(reply.Allocations, func(i, j int) bool {
			return reply.Allocations[i].CreateIndex > reply.Allocations[j].CreateIndex
		})
		return st.Index(state.TableAllocs)
	})
}

// GetAlloc returns one allocation.
func (a *Alloc) GetAlloc(args *structs.AllocSpecificRequest, reply *structs.SingleAllocResponse) error {
	if done, err := a.srv.forwardQuery("Alloc.GetAlloc", &args.QueryOptions, args, reply); done {
		return err
	}
	canRead, err := a.srv.readJobCheck(args.AuthToken)
	if err != nil {
		return err
	}
	return a.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		alloc, err := st.AllocByID(ws, args.AllocID)
		if err != nil {
			return 0, err
		}
		if alloc != nil {
			if err := canRead(alloc.Namespace); err != nil {
				return 0, err
			}
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
	if done, err := a.srv.forwardQuery("Alloc.GetAllocs", &args.QueryOptions, args, reply); done {
		return err
	}
	canRead, err := a.srv.readJobCheck(args.AuthToken)
	if errors.Is(err, structs.ErrTokenNotFound) {
		// Not an ACL token: a client's node secret, checked per allocation.
		canRead, err = func(string) error { return structs.ErrPermissionDenied }, nil
	}
	if err != nil {
		return err
	}
	return a.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		reply.Allocs = make([]*structs.Allocation, 0, len(args.AllocIDs))
		var index uint64
		for _, id := range args.AllocIDs {
			alloc, err := st.AllocByID(ws, id)
			if err != nil {
				return 0, err
			}
			if alloc == nil || !a.srv.mayPullAlloc(st, args.AuthToken, alloc, canRead) {
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

// Stop marks an allocation for migration and creates the evaluation that
// stops and replaces it. An unknown allocation (its node disconnected) is
// stopped on the server now and by its client when it comes back
// (see docs/concepts/disconnected-clients.md, "Operator actions").
func (a *Alloc) Stop(args *structs.AllocStopRequest, reply *structs.AllocStopResponse) error {
	if done, err := a.srv.forward("Alloc.Stop", args, reply); done {
		return err
	}
	if args.AllocID == "" {
		return fmt.Errorf("%w: missing allocation ID", structs.ErrMissingField)
	}
	alloc, err := a.srv.State().AllocByID(nil, args.AllocID)
	if err != nil {
		return err
	}
	if alloc == nil {
		return fmt.Errorf("%w: %s", structs.ErrUnknownAlloc, args.AllocID)
	}
	if err := a.srv.authorize(args.AuthToken, nsCap(alloc.Namespace, acl.NamespaceCapabilityAllocLifecycle)); err != nil {
		return err
	}
	args.AuthToken = ""
	yes := true
	if alloc.ServerTerminalStatus() && !alloc.ClientTerminalStatus() && args.NoShutdownDelay {
		// Stopped already and still running on its client, in its
		// shutdown_delay: the stop is there, only its delay is cut short.
		req := &structs.AllocUpdateDesiredTransitionRequest{
			Allocs:       map[string]*structs.DesiredTransition{alloc.ID: {NoShutdownDelay: &yes}},
			WriteRequest: args.WriteRequest,
		}
		_, index, err := a.srv.raftApply(structs.AllocUpdateDesiredTransitionRequestType, req)
		if err != nil {
			return err
		}
		reply.Index = index
		return nil
	}
	if alloc.TerminalStatus() {
		return fmt.Errorf("%w: allocation %s is already finished (desired %s, client %s)",
			structs.ErrInvalidRequest, alloc.ID, alloc.DesiredStatus, alloc.ClientStatus)
	}
	job := alloc.Job
	if stored, err := a.srv.State().JobByID(nil, alloc.Namespace, alloc.JobID); err != nil {
		return err
	} else if stored != nil {
		job = stored
	}
	if job == nil {
		return fmt.Errorf("%w: allocation %s has no job", structs.ErrInvalidRequest, alloc.ID)
	}
	tr := &structs.DesiredTransition{Migrate: &yes}
	if args.NoShutdownDelay {
		tr.NoShutdownDelay = &yes
	}
	ev := job.NewEval(structs.EvalTriggerAllocStop, a.srv.clock.Now())
	req := &structs.AllocUpdateDesiredTransitionRequest{
		Allocs:       map[string]*structs.DesiredTransition{alloc.ID: tr},
		Evals:        []*structs.Evaluation{ev},
		WriteRequest: args.WriteRequest,
	}
	_, index, err := a.srv.raftApply(structs.AllocUpdateDesiredTransitionRequestType, req)
	if err != nil {
		return err
	}
	reply.EvalID = ev.ID
	reply.Index = index
	return nil
}
