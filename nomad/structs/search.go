package structs

import (
	"fmt"
	"slices"
	"strings"
)

// SearchContext names what a search looks in: one kind of object, or
// SearchAll for every kind. The strings are upstream's (the "deployment"
// context is singular there too).
type SearchContext string

const (
	SearchAllocs          SearchContext = "allocs"
	SearchJobs            SearchContext = "jobs"
	SearchNodes           SearchContext = "nodes"
	SearchNodePools       SearchContext = "node_pools"
	SearchEvals           SearchContext = "evals"
	SearchDeployments     SearchContext = "deployment"
	SearchPlugins         SearchContext = "plugins"
	SearchVolumes         SearchContext = "volumes"
	SearchScalingPolicies SearchContext = "scaling_policy"
	SearchVariables       SearchContext = "vars"
	SearchNamespaces      SearchContext = "namespaces"
	SearchAll             SearchContext = "all"

	// The parts of a job a fuzzy search of jobs also matches; they are
	// result keys, not contexts a request may name.
	SearchGroups   SearchContext = "groups"
	SearchTasks    SearchContext = "tasks"
	SearchServices SearchContext = "services"
	SearchImages   SearchContext = "images"
	SearchCommands SearchContext = "commands"
)

// SearchContexts are the contexts a request may name besides SearchAll,
// in upstream's order (its error message lists them so). Plugins and
// volumes are CSI objects, which this cluster has none of: searching them
// is valid and finds nothing.
var SearchContexts = []SearchContext{
	SearchAllocs, SearchJobs, SearchNodes, SearchNodePools, SearchEvals, SearchDeployments,
	SearchPlugins, SearchVolumes, SearchScalingPolicies, SearchVariables, SearchNamespaces,
}

// SearchPrefixLimit is how many matches a prefix search returns per
// context before it reports the context truncated (upstream's 20).
const SearchPrefixLimit = 20

// Expand returns the contexts c covers, or an error in upstream's words
// for a context no search knows.
func (c SearchContext) Expand() ([]SearchContext, error) {
	if c == SearchAll {
		return SearchContexts, nil
	}
	if slices.Contains(SearchContexts, c) {
		return []SearchContext{c}, nil
	}
	names := make([]string, len(SearchContexts))
	for i, s := range SearchContexts {
		names[i] = string(s)
	}
	return nil, fmt.Errorf("%w: context must be one of [%s] or 'all' for all contexts; got %q",
		ErrInvalidRequest, strings.Join(names, " "), string(c))
}

// SearchRequest is a prefix search: the IDs (names, paths) in Context
// that start with Prefix.
type SearchRequest struct {
	Prefix  string
	Context SearchContext
	QueryOptions
}

// SearchResponse lists the matches per context, at most SearchPrefixLimit
// each; a context searched with no match is present with a nil list, as
// upstream's (JSON null).
type SearchResponse struct {
	Matches     map[SearchContext][]string
	Truncations map[SearchContext]bool
	QueryMeta
}

// FuzzySearchRequest is a fuzzy search: the names in Context that
// contain Text, ignoring case.
type FuzzySearchRequest struct {
	Text    string
	Context SearchContext
	QueryOptions
}

// FuzzyMatch is one match: the name matched and the IDs of what holds it,
// outermost first (a task's: namespace, job, group).
type FuzzyMatch struct {
	ID    string
	Scope []string
}

// FuzzySearchResponse lists the matches per result key (a context, or a
// part of a job such as "groups"); keys without matches are left out.
type FuzzySearchResponse struct {
	Matches     map[SearchContext][]FuzzyMatch
	Truncations map[SearchContext]bool
	QueryMeta
}

// SearchConfig is the server's search block: the fuzzy search endpoint
// and its bounds, with upstream's names and defaults.
type SearchConfig struct {
	// FuzzyEnabled turns /v1/search/fuzzy on (the default).
	FuzzyEnabled bool
	// LimitQuery is how many objects of each context a fuzzy search
	// looks at before it stops and reports the context truncated.
	LimitQuery int
	// LimitResults is how many matches of each kind it returns.
	LimitResults int
	// MinTermLength is the shortest Text it accepts.
	MinTermLength int
}

// DefaultSearchConfig is upstream's: enabled, 20 objects, 100 matches,
// terms of two characters or more.
func DefaultSearchConfig() SearchConfig {
	return SearchConfig{FuzzyEnabled: true, LimitQuery: 20, LimitResults: 100, MinTermLength: 2}
}
