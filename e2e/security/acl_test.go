package security

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/e2e/internal/harness"
	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// With acl.enabled an outsider without a token reads and changes no job,
// node or variable, over HTTP or RPC, and gets exactly what an anonymous
// policy grants once one is written; a management token opens the same
// routes, and still takes no server's work. Node RPCs check node
// secrets, not ACL tokens, so a new node still registers (security.md's
// fourth row).
func TestOutsider_ACL(t *testing.T) {
	t.Parallel()
	ags := harness.NewAgents(t)
	srv := startServer(t, ags, "", "\nacl {\n  enabled = true\n}\n")
	o := outsider{addr: srv.RPCAddr()}
	api := srv.HTTPAddr()

	code, body := httpCall(t, "POST", api+"/v1/acl/bootstrap", "", "")
	must.Eq(t, http.StatusOK, code, must.Sprint(body))
	var mgmt struct{ SecretID string }
	must.NoError(t, json.Unmarshal([]byte(body), &mgmt))
	must.NotEq(t, "", mgmt.SecretID)

	const noToken = "Permission denied: no ACL token given (set X-Nomad-Token, NOMAD_TOKEN or -token), and anonymous requests lack "
	routes := []struct{ method, path, body string }{
		{"GET", "/v1/jobs", ""},
		{"PUT", "/v1/jobs", bigJob(t, "small", 1, 1)},
		{"GET", "/v1/nodes", ""},
		{"PUT", "/v1/var/outsider", `{"Items":{"k":"v"}}`},
		{"GET", "/v1/var/outsider", ""},
	}

	t.Run("WithoutTokenRefused", func(t *testing.T) {
		for _, r := range routes {
			code, body := httpCall(t, r.method, api+r.path, "", r.body)
			must.Eq(t, http.StatusForbidden, code, must.Sprintf("%s %s: %s", r.method, r.path, body))
			must.StrContains(t, body, noToken, must.Sprintf("%s %s", r.method, r.path))
		}
		var resp structs.JobRegisterResponse
		err := o.call("Job.Register", &structs.JobRegisterRequest{Job: mock.Job()}, &resp)
		must.ErrorIs(t, err, structs.ErrPermissionDenied)
		must.ErrorContains(t, err, noToken)
	})

	t.Run("WithTokenAllowed", func(t *testing.T) {
		for _, r := range routes {
			code, body := httpCall(t, r.method, api+r.path, mgmt.SecretID, r.body)
			must.Eq(t, http.StatusOK, code, must.Sprintf("%s %s: %s", r.method, r.path, body))
		}
	})

	// A list is filtered rather than refused: it answers, empty.
	t.Run("VariableListFiltered", func(t *testing.T) {
		code, body := httpCall(t, "GET", api+"/v1/vars", mgmt.SecretID, "")
		must.Eq(t, http.StatusOK, code, must.Sprint(body))
		must.StrContains(t, body, `"outsider"`)
		code, body = httpCall(t, "GET", api+"/v1/vars", "", "")
		must.Eq(t, http.StatusOK, code, must.Sprint(body))
		must.Eq(t, "[]", strings.TrimSpace(body))
	})

	t.Run("OpenRoutes", func(t *testing.T) {
		for _, path := range []string{"/v1/agent/health", "/v1/status/leader", "/v1/status/peers"} {
			code, body := httpCall(t, "GET", api+path, "", "")
			must.Eq(t, http.StatusOK, code, must.Sprintf("GET %s: %s", path, body))
		}
	})

	t.Run("ServerOnlyRPCsRefusedEvenToManagement", func(t *testing.T) {
		probeServerOnly(t, o, mgmt.SecretID, "needs the servers' identity, which this caller did not prove")
		must.True(t, o.raftClosed(t), must.Sprint("a raft connection from an outsider kept open"))
	})

	t.Run("RegistersNewNode", func(t *testing.T) {
		must.NoError(t, o.register(newNode("edge-1"), ""))
	})

	// Last: it changes what anonymous callers get. A namespace's read
	// policy grants reading its jobs and (as upstream, when the rule
	// names no variables) its variables; writes and nodes stay refused.
	t.Run("AnonymousPolicyGrantsOnlyItself", func(t *testing.T) {
		code, body := httpCall(t, "POST", api+"/v1/acl/policy/anonymous", mgmt.SecretID,
			`{"Name":"anonymous","Rules":"namespace \"default\" { policy = \"read\" }"}`)
		must.Eq(t, http.StatusOK, code, must.Sprint(body))
		for _, path := range []string{"/v1/jobs", "/v1/var/outsider"} {
			code, body = httpCall(t, "GET", api+path, "", "")
			must.Eq(t, http.StatusOK, code, must.Sprintf("GET %s granted to anonymous: %s", path, body))
		}
		for _, r := range []int{1, 2, 3} { // PUT /v1/jobs, GET /v1/nodes, PUT /v1/var/outsider
			code, body := httpCall(t, routes[r].method, api+routes[r].path, "", routes[r].body)
			must.Eq(t, http.StatusForbidden, code, must.Sprintf("%s %s: %s", routes[r].method, routes[r].path, body))
			must.StrContains(t, body, noToken)
		}
	})
}
