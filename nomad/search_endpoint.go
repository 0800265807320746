package nomad

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/go-memdb"

	"github.com/nomad-edge/nomad/acl"
	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// Search is the Search.* RPC endpoint behind /v1/search (IDs by prefix,
// what the CLI and the UI complete with) and /v1/search/fuzzy (names by
// substring). Both read one state snapshot and show only what the
// caller's token may read: a context it may not read at all is refused
// when named, and left out of "all".
type Search struct {
	srv *Server
}

// searchTables are the state tables whose index a context's answer
// carries.
var searchTables = map[structs.SearchContext][]string{
	structs.SearchAllocs:          {state.TableAllocs},
	structs.SearchJobs:            {state.TableJobs},
	structs.SearchNodes:           {state.TableNodes},
	structs.SearchNodePools:       {state.TableNodePools},
	structs.SearchEvals:           {state.TableEvals},
	structs.SearchDeployments:     {state.TableDeployment},
	structs.SearchScalingPolicies: {state.TableJobs},
	structs.SearchVariables:       {state.TableVariables},
	structs.SearchNamespaces:      {state.TableNamespaces},
}

// searchScope is what the caller may see in the request's namespace
// ("*": every namespace, each object checked by its own).
type searchScope struct {
	acl *acl.ACL
	ns  string
}

// mayRead reports whether the caller may see objects of context c in
// namespace ns (the request's, or an object's).
func (sc searchScope) mayRead(c structs.SearchContext, ns string) bool {
	a := sc.acl
	switch c {
	case structs.SearchJobs, structs.SearchAllocs, structs.SearchEvals, structs.SearchDeployments:
		return a.AllowNamespaceOperation(ns, acl.NamespaceCapabilityReadJob)
	case structs.SearchScalingPolicies:
		return a.AllowNamespaceOperation(ns, acl.NamespaceCapabilityListScalingPolicies) ||
			a.AllowNamespaceOperation(ns, acl.NamespaceCapabilityReadJob)
	case structs.SearchNodes:
		return a.AllowNodeRead()
	case structs.SearchNodePools, structs.SearchNamespaces, structs.SearchVariables,
		structs.SearchPlugins, structs.SearchVolumes:
		// Filtered object by object (pool, namespace, variable path);
		// CSI objects do not exist here.
		return true
	}
	return false
}

// contexts expands the request's context to those the caller may read.
// A single context it may not read is refused; "all" drops them.
func (s *Search) contexts(c structs.SearchContext, sc searchScope, secret string) ([]structs.SearchContext, error) {
	all, err := c.Expand()
	if err != nil {
		return nil, err
	}
	// In "*" each object is checked against its own namespace.
	ns := sc.ns
	if ns == state.AllNamespaces {
		return all, nil
	}
	var out []structs.SearchContext
	for _, ctx := range all {
		if sc.mayRead(ctx, ns) {
			out = append(out, ctx)
		}
	}
	if c != structs.SearchAll && len(out) == 0 {
		return nil, check(sc.acl, secret, permission{
			allow: func(*acl.ACL) bool { return false },
			what:  fmt.Sprintf("read access to %s in namespace %q", c, ns),
		})
	}
	return out, nil
}

func (s *Search) scope(opts *structs.QueryOptions) (searchScope, error) {
	a, _, err := s.srv.resolveToken(opts.AuthToken)
	if err != nil {
		return searchScope{}, err
	}
	return searchScope{acl: a, ns: opts.RequestNamespace()}, nil
}

// PrefixSearch returns, per context, the IDs that start with the prefix
// (names for node pools and namespaces, paths for variables), in order,
// at most structs.SearchPrefixLimit each.
func (s *Search) PrefixSearch(args *structs.SearchRequest, reply *structs.SearchResponse) error {
	if done, err := s.srv.forwardQuery("Search.PrefixSearch", &args.QueryOptions, args, reply); done {
		return err
	}
	sc, err := s.scope(&args.QueryOptions)
	if err != nil {
		return err
	}
	contexts, err := s.contexts(args.Context, sc, args.AuthToken)
	if err != nil {
		return err
	}
	return s.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		reply.Matches = make(map[structs.SearchContext][]string, len(contexts))
		reply.Truncations = make(map[structs.SearchContext]bool, len(contexts))
		var tables []string
		for _, c := range contexts {
			m := &prefixMatches{limit: structs.SearchPrefixLimit}
			if err := searchObjects(ws, st, sc, c, args.Prefix, func(o searchObject) bool {
				return m.add(o.id)
			}); err != nil {
				return 0, err
			}
			reply.Matches[c] = m.ids
			reply.Truncations[c] = m.truncated
			tables = append(tables, searchTables[c]...)
		}
		return tableIndex(st, tables...)
	})
}

// prefixMatches collects IDs up to limit and notes whether there were
// more.
type prefixMatches struct {
	limit     int
	ids       []string
	truncated bool
}

func (m *prefixMatches) add(id string) bool {
	if len(m.ids) == m.limit {
		m.truncated = true
		return false
	}
	m.ids = append(m.ids, id)
	return true
}

// searchObject is one object a search visits: its ID (or name, or path)
// for a prefix search and what a fuzzy search matches in it.
type searchObject struct {
	id string
	// name is what a fuzzy search matches, and scope what holds it.
	name  string
	scope []string
	// job is set for jobs, whose groups, tasks, services, images and
	// commands a fuzzy search matches too.
	job *structs.Job
}

// searchObjects calls visit, in ID order, for each object of context c
// whose ID starts with prefix and which the caller may read, until visit
// returns false.
func searchObjects(ws memdb.WatchSet, st *state.StateStore, sc searchScope, c structs.SearchContext, prefix string, visit func(searchObject) bool) error {
	each := func(iter memdb.ResultIterator, err error, of func(raw any) (searchObject, bool)) error {
		if err != nil {
			return err
		}
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			if o, ok := of(raw); ok && !visit(o) {
				return nil
			}
		}
		return nil
	}
	ns := sc.ns
	switch c {
	case structs.SearchJobs:
		iter, err := st.JobsByIDPrefix(ws, ns, prefix)
		return each(iter, err, func(raw any) (searchObject, bool) {
			j := raw.(*structs.Job)
			return searchObject{id: j.ID, name: j.Name, scope: []string{j.Namespace, j.ID}, job: j}, sc.mayRead(c, j.Namespace)
		})
	case structs.SearchAllocs:
		iter, err := st.AllocsByIDPrefix(ws, ns, prefix)
		return each(iter, err, func(raw any) (searchObject, bool) {
			a := raw.(*structs.Allocation)
			return searchObject{id: a.ID, name: a.Name, scope: []string{a.Namespace, a.ID}}, sc.mayRead(c, a.Namespace)
		})
	case structs.SearchEvals:
		iter, err := st.EvalsByIDPrefix(ws, ns, prefix)
		return each(iter, err, func(raw any) (searchObject, bool) {
			e := raw.(*structs.Evaluation)
			return searchObject{id: e.ID, name: e.ID}, sc.mayRead(c, e.Namespace)
		})
	case structs.SearchNodes:
		if !sc.mayRead(c, "") {
			return nil
		}
		iter, err := st.NodesByIDPrefix(ws, prefix)
		return each(iter, err, func(raw any) (searchObject, bool) {
			n := raw.(*structs.Node)
			return searchObject{id: n.ID, name: n.Name, scope: []string{n.ID}}, true
		})
	case structs.SearchNodePools:
		iter, err := st.NodePoolsByNamePrefix(ws, prefix)
		return each(iter, err, func(raw any) (searchObject, bool) {
			p := raw.(*structs.NodePool)
			return searchObject{id: p.Name, name: p.Name, scope: []string{p.Name}}, sc.acl.AllowNodePool(p.Name, false)
		})
	case structs.SearchNamespaces:
		iter, err := st.NamespacesByNamePrefix(ws, prefix)
		return each(iter, err, func(raw any) (searchObject, bool) {
			n := raw.(*structs.Namespace)
			return searchObject{id: n.Name, name: n.Name}, sc.acl.AllowNamespace(n.Name)
		})
	case structs.SearchDeployments:
		ds, err := st.Deployments(ws, ns, prefix)
		if err != nil {
			return err
		}
		// The store lists them newest first; a search lists IDs in order.
		slices.SortFunc(ds, func(a, b *structs.Deployment) int { return cmp.Compare(a.ID, b.ID) })
		for _, d := range ds {
			if sc.mayRead(c, d.Namespace) && !visit(searchObject{id: d.ID, name: d.ID}) {
				return nil
			}
		}
	case structs.SearchScalingPolicies:
		ps, err := st.ScalingPolicies(ws, ns)
		if err != nil {
			return err
		}
		for _, p := range ps {
			pns := p.Target[structs.ScalingTargetNamespace]
			if strings.HasPrefix(p.ID, prefix) && sc.mayRead(c, pns) && !visit(searchObject{id: p.ID, name: p.ID}) {
				return nil
			}
		}
	case structs.SearchVariables:
		vs, err := st.Variables(ws, ns, prefix)
		if err != nil {
			return err
		}
		for _, v := range vs {
			if !sc.acl.AllowVariableOperation(v.Namespace, v.Path, acl.VariablesCapabilityList) {
				continue
			}
			if !visit(searchObject{id: v.Path, name: v.Path, scope: []string{v.Namespace, v.Path}}) {
				return nil
			}
		}
	}
	// Plugins and volumes: no CSI objects exist here.
	return nil
}
