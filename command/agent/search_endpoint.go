package agent

import (
	"net/http"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// searchRoutes registers /v1/search (by prefix) and /v1/search/fuzzy (by
// substring); upstream takes both methods.
func (s *HTTPServer) searchRoutes(handle func(string, handlerFunc)) {
	for _, m := range []string{http.MethodPut, http.MethodPost} {
		handle(m+" /v1/search", s.prefixSearch)
		handle(m+" /v1/search/fuzzy", s.fuzzySearch)
	}
}

// prefixSearch handles /v1/search: {"Prefix": ..., "Context": ...}.
func (s *HTTPServer) prefixSearch(w http.ResponseWriter, r *http.Request) (any, error) {
	var body struct {
		Prefix  string
		Context structs.SearchContext
	}
	if err := decodeBody(r, &body); err != nil {
		return nil, err
	}
	args := &structs.SearchRequest{Prefix: body.Prefix, Context: body.Context}
	var reply structs.SearchResponse
	if err := s.query(w, r, readCall{"Search.PrefixSearch", &args.QueryOptions, args, &reply, &reply.QueryMeta}); err != nil {
		return nil, err
	}
	return reply, nil
}

// fuzzySearch handles /v1/search/fuzzy: {"Text": ..., "Context": ...}.
func (s *HTTPServer) fuzzySearch(w http.ResponseWriter, r *http.Request) (any, error) {
	var body struct {
		Text    string
		Context structs.SearchContext
	}
	if err := decodeBody(r, &body); err != nil {
		return nil, err
	}
	args := &structs.FuzzySearchRequest{Text: body.Text, Context: body.Context}
	var reply structs.FuzzySearchResponse
	if err := s.query(w, r, readCall{"Search.FuzzySearch", &args.QueryOptions, args, &reply, &reply.QueryMeta}); err != nil {
		return nil, err
	}
	return reply, nil
}
