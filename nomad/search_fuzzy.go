package nomad

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/go-memdb"

	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// idContexts are the contexts whose objects have no name, only an ID: a
// fuzzy search of "all" matches them by ID prefix instead, and lists them
// even when empty (upstream's response does: clients may expect the
// keys).
var idContexts = []structs.SearchContext{
	structs.SearchEvals, structs.SearchDeployments, structs.SearchVolumes, structs.SearchScalingPolicies,
}

// FuzzySearch returns, per kind, the names that contain the text, ignoring
// case: jobs and their groups, tasks, services, images and commands,
// allocations, nodes, node pools, namespaces and variable paths. Each
// context is read for at most the server's search.limit_query objects and
// each kind returns at most search.limit_results matches, best first (an
// earlier match, then a shorter name).
func (s *Search) FuzzySearch(args *structs.FuzzySearchRequest, reply *structs.FuzzySearchResponse) error {
	if done, err := s.srv.forwardQuery("Search.FuzzySearch", &args.QueryOptions, args, reply); done {
		return err
	}
	cfg := s.srv.config.Search
	if !cfg.FuzzyEnabled {
		return fmt.Errorf("%w: fuzzy search is not enabled (server.search.fuzzy_enabled = false)", structs.ErrInvalidRequest)
	}
	if n := len([]rune(args.Text)); n < cfg.MinTermLength {
		return fmt.Errorf("%w: fuzzy search query must be at least %d characters, got %d", structs.ErrInvalidRequest, cfg.MinTermLength, n)
	}
	sc, err := s.scope(&args.QueryOptions)
	if err != nil {
		return err
	}
	contexts, err := s.contexts(args.Context, sc, args.AuthToken)
	if err != nil {
		return err
	}
	text := strings.ToLower(args.Text)
	return s.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		reply.Matches = map[structs.SearchContext][]structs.FuzzyMatch{}
		reply.Truncations = make(map[structs.SearchContext]bool, len(contexts))
		f := newFuzzyMatches(text)
		var tables []string
		for _, c := range contexts {
			tables = append(tables, searchTables[c]...)
			if slices.Contains(idContexts, c) {
				// By ID prefix, as upstream: IDs are not names.
				m := &prefixMatches{limit: cfg.LimitResults}
				if err := searchObjects(ws, st, sc, c, args.Text, func(o searchObject) bool { return m.add(o.id) }); err != nil {
					return 0, err
				}
				list := make([]structs.FuzzyMatch, 0, len(m.ids))
				for _, id := range m.ids {
					list = append(list, structs.FuzzyMatch{ID: id})
				}
				reply.Matches[c] = list
				reply.Truncations[c] = m.truncated
				continue
			}
			seen := 0
			err := searchObjects(ws, st, sc, c, "", func(o searchObject) bool {
				if seen == cfg.LimitQuery {
					f.truncated[c] = true
					return false
				}
				seen++
				f.object(c, o)
				return true
			})
			if err != nil {
				return 0, err
			}
			reply.Truncations[c] = reply.Truncations[c] || f.truncated[c]
		}
		for kind, list := range f.byKind {
			slices.SortFunc(list, func(a, b scoredMatch) int {
				return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(len(a.ID), len(b.ID)), cmp.Compare(a.ID, b.ID))
			})
			out := make([]structs.FuzzyMatch, 0, min(len(list), cfg.LimitResults))
			for _, m := range list {
				if len(out) == cfg.LimitResults {
					reply.Truncations[f.from[kind]] = true
					break
				}
				out = append(out, m.FuzzyMatch)
			}
			reply.Matches[kind] = out
		}
		return tableIndex(st, tables...)
	})
}

// scoredMatch is a match and where in the name the text was found.
type scoredMatch struct {
	structs.FuzzyMatch
	at int
}

// fuzzyMatches gathers the matches of one search, per kind.
type fuzzyMatches struct {
	text   string
	byKind map[structs.SearchContext][]scoredMatch
	// from is the context each kind came from, for its truncation flag.
	from      map[structs.SearchContext]structs.SearchContext
	truncated map[structs.SearchContext]bool
}

func newFuzzyMatches(text string) *fuzzyMatches {
	return &fuzzyMatches{
		text:      text,
		byKind:    map[structs.SearchContext][]scoredMatch{},
		from:      map[structs.SearchContext]structs.SearchContext{},
		truncated: map[structs.SearchContext]bool{},
	}
}

// object matches o, and for a job each of its parts.
func (f *fuzzyMatches) object(c structs.SearchContext, o searchObject) {
	f.match(c, c, o.name, o.scope)
	if o.job == nil {
		return
	}
	j := o.job
	for _, tg := range j.TaskGroups {
		groupScope := []string{j.Namespace, j.ID}
		f.match(c, structs.SearchGroups, tg.Name, groupScope)
		inGroup := []string{j.Namespace, j.ID, tg.Name}
		for _, svc := range tg.Services {
			f.match(c, structs.SearchServices, svc.Name, inGroup)
		}
		for _, t := range tg.Tasks {
			f.match(c, structs.SearchTasks, t.Name, inGroup)
			inTask := []string{j.Namespace, j.ID, tg.Name, t.Name}
			for _, svc := range t.Services {
				f.match(c, structs.SearchServices, svc.Name, inTask)
			}
			if image, ok := t.Config["image"].(string); ok {
				f.match(c, structs.SearchImages, image, inTask)
			}
			if command, ok := t.Config["command"].(string); ok {
				f.match(c, structs.SearchCommands, command, inTask)
			}
		}
	}
}

func (f *fuzzyMatches) match(from, kind structs.SearchContext, name string, scope []string) {
	at := strings.Index(strings.ToLower(name), f.text)
	if at < 0 {
		return
	}
	f.from[kind] = from
	f.byKind[kind] = append(f.byKind[kind], scoredMatch{FuzzyMatch: structs.FuzzyMatch{ID: name, Scope: scope}, at: at})
}
