package nomad

import (
	"fmt"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

func searchJob(id, ns string) *structs.Job {
	j := mock.Job()
	j.ID, j.Name, j.Namespace = id, id, ns
	return j
}

func registerSearchJobs(t *testing.T, s *Server, secret string, jobs ...*structs.Job) {
	t.Helper()
	for _, j := range jobs {
		must.NoError(t, s.RPC("Job.Register", &structs.JobRegisterRequest{Job: j,
			WriteRequest: structs.WriteRequest{Namespace: j.Namespace, AuthToken: secret}}, &structs.JobRegisterResponse{}))
	}
}

func prefixSearch(s *Server, secret, ns, prefix string, c structs.SearchContext) (*structs.SearchResponse, error) {
	var resp structs.SearchResponse
	err := s.RPC("Search.PrefixSearch", &structs.SearchRequest{Prefix: prefix, Context: c,
		QueryOptions: structs.QueryOptions{Namespace: ns, AuthToken: secret}}, &resp)
	return &resp, err
}

func fuzzySearch(s *Server, secret, ns, text string, c structs.SearchContext) (*structs.FuzzySearchResponse, error) {
	var resp structs.FuzzySearchResponse
	err := s.RPC("Search.FuzzySearch", &structs.FuzzySearchRequest{Text: text, Context: c,
		QueryOptions: structs.QueryOptions{Namespace: ns, AuthToken: secret}}, &resp)
	return &resp, err
}

// A prefix search lists the IDs of one context in order, or of every
// context for "all" (each present, nil when nothing matches, as
// upstream's), 20 at most with the context marked truncated, across
// namespaces for "*", and refuses an unknown context naming the valid ones.
func TestSearch_Prefix(t *testing.T) {
	s := testServer(t, nil)
	node := registerNode(t, s)
	must.NoError(t, upsertNamespace(t, s, "", &structs.Namespace{Name: "prod"}))
	registerSearchJobs(t, s, "", searchJob("web-edge", "default"), searchJob("web-core", "default"),
		searchJob("db", "default"), searchJob("web-prod", "prod"))

	resp, err := prefixSearch(s, "", "", "web", structs.SearchJobs)
	must.NoError(t, err)
	must.Eq(t, map[structs.SearchContext][]string{structs.SearchJobs: {"web-core", "web-edge"}}, resp.Matches)
	must.Eq(t, map[structs.SearchContext]bool{structs.SearchJobs: false}, resp.Truncations)
	must.Positive(t, resp.Index)

	resp, err = prefixSearch(s, "", "*", "web", structs.SearchJobs)
	must.NoError(t, err)
	must.Eq(t, []string{"web-core", "web-edge", "web-prod"}, resp.Matches[structs.SearchJobs])

	resp, err = prefixSearch(s, "", "", node.ID[:5], structs.SearchAll)
	must.NoError(t, err)
	must.MapLen(t, len(structs.SearchContexts), resp.Matches)
	must.Eq(t, []string{node.ID}, resp.Matches[structs.SearchNodes])
	must.Nil(t, resp.Matches[structs.SearchVolumes])
	must.MapContainsKey(t, resp.Matches, structs.SearchVolumes)

	resp, err = prefixSearch(s, "", "", "", structs.SearchNodePools)
	must.NoError(t, err)
	must.Eq(t, []string{"all", "default"}, resp.Matches[structs.SearchNodePools])

	for i := range 25 {
		registerSearchJobs(t, s, "", searchJob(fmt.Sprintf("bulk-%02d", i), "default"))
	}
	resp, err = prefixSearch(s, "", "", "bulk", structs.SearchJobs)
	must.NoError(t, err)
	must.SliceLen(t, structs.SearchPrefixLimit, resp.Matches[structs.SearchJobs])
	must.Eq(t, "bulk-00", resp.Matches[structs.SearchJobs][0])
	must.True(t, resp.Truncations[structs.SearchJobs])

	// An evaluation by the first characters of its ID, odd or even.
	resp, err = prefixSearch(s, "", "", "", structs.SearchEvals)
	must.NoError(t, err)
	must.SliceNotEmpty(t, resp.Matches[structs.SearchEvals])
	evalID := resp.Matches[structs.SearchEvals][0]
	resp, err = prefixSearch(s, "", "", evalID[:3], structs.SearchEvals)
	must.NoError(t, err)
	must.SliceContains(t, resp.Matches[structs.SearchEvals], evalID)

	_, err = prefixSearch(s, "", "", "x", "bogus")
	must.ErrorIs(t, err, structs.ErrInvalidRequest)
	must.ErrorContains(t, err, `context must be one of [allocs jobs nodes node_pools evals deployment plugins volumes scaling_policy vars namespaces] or 'all' for all contexts; got "bogus"`)
}

// A fuzzy search matches names anywhere, ignoring case, and a job's
// groups, tasks, services, images and commands with the IDs that hold
// them; it orders an earlier match first, then a shorter name; a term
// below min_term_length is refused; limit_query bounds how many objects
// are read and marks the context truncated; ID contexts match by prefix
// and are always listed for "all".
func TestSearch_Fuzzy(t *testing.T) {
	s := testServer(t, func(c *Config) { c.Search.LimitQuery = 3 })
	node := registerNode(t, s)
	j := searchJob("web-edge", "default")
	tg := j.TaskGroups[0]
	tg.Name = "frontend"
	tg.Services = []*structs.Service{{Name: "websvc", Provider: "nomad"}}
	tg.Tasks[0].Name = "server"
	tg.Tasks[0].Driver = "raw_exec"
	tg.Tasks[0].Config = map[string]any{"command": "/bin/sleep", "args": []any{"600"}}
	img := tg.Tasks[0].Copy()
	img.Name, img.Driver, img.Config = "cache", "docker", map[string]any{"image": "redis:7"}
	tg.Tasks = append(tg.Tasks, img)
	registerSearchJobs(t, s, "", j)

	resp, err := fuzzySearch(s, "", "", "WEB", structs.SearchAll)
	must.NoError(t, err)
	must.Eq(t, []structs.FuzzyMatch{{ID: "web-edge", Scope: []string{"default", "web-edge"}}}, resp.Matches[structs.SearchJobs])
	must.Eq(t, []structs.FuzzyMatch{{ID: "websvc", Scope: []string{"default", "web-edge", "frontend"}}}, resp.Matches[structs.SearchServices])
	for _, c := range idContexts {
		must.MapContainsKey(t, resp.Matches, c)
	}
	must.MapNotContainsKey(t, resp.Matches, structs.SearchNodes)

	resp, err = fuzzySearch(s, "", "", "sle", structs.SearchJobs)
	must.NoError(t, err)
	must.Eq(t, map[structs.SearchContext][]structs.FuzzyMatch{
		structs.SearchCommands: {{ID: "/bin/sleep", Scope: []string{"default", "web-edge", "frontend", "server"}}},
	}, resp.Matches)
	must.Eq(t, map[structs.SearchContext]bool{structs.SearchJobs: false}, resp.Truncations)

	resp, err = fuzzySearch(s, "", "", "redis", structs.SearchJobs)
	must.NoError(t, err)
	must.Eq(t, []structs.FuzzyMatch{{ID: "redis:7", Scope: []string{"default", "web-edge", "frontend", "cache"}}}, resp.Matches[structs.SearchImages])

	resp, err = fuzzySearch(s, "", "", node.Name[:2], structs.SearchNodes)
	must.NoError(t, err)
	must.Eq(t, []structs.FuzzyMatch{{ID: node.Name, Scope: []string{node.ID}}}, resp.Matches[structs.SearchNodes])

	_, err = fuzzySearch(s, "", "", "w", structs.SearchAll)
	must.ErrorIs(t, err, structs.ErrInvalidRequest)
	must.ErrorContains(t, err, "fuzzy search query must be at least 2 characters, got 1")

	// Ordering, and limit_query = 3 over four jobs read in ID order.
	registerSearchJobs(t, s, "", searchJob("a-app", "default"), searchJob("app-config", "default"), searchJob("app-v1", "default"))
	resp, err = fuzzySearch(s, "", "", "app", structs.SearchJobs)
	must.NoError(t, err)
	var ids []string
	for _, m := range resp.Matches[structs.SearchJobs] {
		ids = append(ids, m.ID)
	}
	must.Eq(t, []string{"app-v1", "app-config", "a-app"}, ids)
	must.True(t, resp.Truncations[structs.SearchJobs])

	resp, err = fuzzySearch(s, "", "", "web", structs.SearchJobs)
	must.NoError(t, err)
	must.MapNotContainsKey(t, resp.Matches, structs.SearchJobs, must.Sprint("web-edge is the fourth job in ID order: past limit_query"))
}

// With ACLs a search shows only what the token may read: "all" leaves out
// nodes for a token without node read and that context is refused when
// named; in "*" a job in a namespace the token cannot read is dropped; a
// fuzzy search behaves alike; fuzzy_enabled = false refuses fuzzy search.
func TestSearch_ACL(t *testing.T) {
	s, mgmt := aclServer(t)
	registerNode(t, s)
	must.NoError(t, upsertNamespace(t, s, mgmt.SecretID, &structs.Namespace{Name: "prod"}))
	registerSearchJobs(t, s, mgmt.SecretID, searchJob("web-edge", "default"), searchJob("web-prod", "prod"))
	tok := clientToken(t, s, mgmt, `namespace "default" { policy = "read" }`)

	resp, err := prefixSearch(s, tok.SecretID, "", "", structs.SearchAll)
	must.NoError(t, err)
	must.Eq(t, []string{"web-edge"}, resp.Matches[structs.SearchJobs])
	must.MapNotContainsKey(t, resp.Matches, structs.SearchNodes)

	_, err = prefixSearch(s, tok.SecretID, "", "", structs.SearchNodes)
	must.ErrorIs(t, err, structs.ErrPermissionDenied)
	_, err = prefixSearch(s, tok.SecretID, "prod", "", structs.SearchJobs)
	must.ErrorIs(t, err, structs.ErrPermissionDenied)
	_, err = prefixSearch(s, "", "", "", structs.SearchJobs)
	must.ErrorIs(t, err, structs.ErrPermissionDenied)

	resp, err = prefixSearch(s, tok.SecretID, "*", "web", structs.SearchJobs)
	must.NoError(t, err)
	must.Eq(t, []string{"web-edge"}, resp.Matches[structs.SearchJobs])

	fz, err := fuzzySearch(s, tok.SecretID, "*", "web", structs.SearchAll)
	must.NoError(t, err)
	must.Eq(t, []structs.FuzzyMatch{{ID: "web-edge", Scope: []string{"default", "web-edge"}}}, fz.Matches[structs.SearchJobs])

	off := testServer(t, func(c *Config) { c.Search.FuzzyEnabled = false })
	_, err = fuzzySearch(off, "", "", "web", structs.SearchAll)
	must.ErrorContains(t, err, "fuzzy search is not enabled")
}
