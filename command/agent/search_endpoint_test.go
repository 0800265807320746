package agent_test

import (
	"net/http"
	"testing"

	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/hashicorp/nomad/api/contexts"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// The official client's PrefixSearch and FuzzySearch decode our answers:
// a job found by prefix, its group and service found by name with the
// IDs that hold them, and bad input answered 400 with the reason.
func TestHTTP_OfficialClientSearch(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	c := officialClient(t, a)
	_, _, err := c.Jobs().Register(serviceJob("shop", 1), nil)
	must.NoError(t, err)

	resp, _, err := c.Search().PrefixSearch("sh", contexts.Jobs, nil)
	must.NoError(t, err)
	must.Eq(t, []string{"shop"}, resp.Matches[contexts.Jobs])
	must.False(t, resp.Truncations[contexts.Jobs])

	all, _, err := c.Search().PrefixSearch("", contexts.All, nil)
	must.NoError(t, err)
	must.Eq(t, []string{"default"}, all.Matches[contexts.Namespaces])

	fz, _, err := c.Search().FuzzySearch("SHOP", contexts.All, nil)
	must.NoError(t, err)
	must.Eq(t, []nomadapi.FuzzyMatch{{ID: "shop", Scope: []string{"default", "shop"}}}, fz.Matches[contexts.Jobs])
	fz, _, err = c.Search().FuzzySearch("api", contexts.Jobs, nil)
	must.NoError(t, err)
	must.Eq(t, []nomadapi.FuzzyMatch{{ID: "${NOMAD_JOB_NAME}-api", Scope: []string{"default", "shop", "web"}}}, fz.Matches[contexts.Services],
		must.Sprint("a service is matched by its name as written in the job, as upstream's"))

	for body, want := range map[string]string{
		`{"Prefix":"x","Context":"bogus"}`:              "context must be one of",
		`{"Prefix":"x","Context":"all","Colour":"red"}`: `unknown field "Colour"`,
	} {
		code, msg := rawRequest(t, http.MethodPost, a.HTTPAddr+"/v1/search", body)
		must.Eq(t, http.StatusBadRequest, code, must.Sprint(msg))
		must.StrContains(t, msg, want)
	}
	code, msg := rawRequest(t, http.MethodPut, a.HTTPAddr+"/v1/search/fuzzy", `{"Text":"s","Context":"all"}`)
	must.Eq(t, http.StatusBadRequest, code)
	must.StrContains(t, msg, "at least 2 characters, got 1")
}
