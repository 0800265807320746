package security

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/e2e/internal/harness"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// Under client_introduction "strict" an outsider cannot register a new
// node without a valid introduction token for its name; the rest of the
// first row stands (server-only RPCs, raft). Without ACLs, though, the
// token is the outsider's for the asking, over HTTP or RPC: minting one
// needs node:write, which nobody is denied when ACLs are off, so strict
// keeps strangers out only together with acl.enabled (security.md's
// second row).
func TestOutsider_Strict(t *testing.T) {
	t.Parallel()
	ags := harness.NewAgents(t)
	srv := startServer(t, ags, `
  client_introduction {
    enforcement = "strict"
  }
`, "")
	o := outsider{addr: srv.RPCAddr()}
	refused := func(n string, id string) string {
		return fmt.Sprintf(`Permission denied: a new node must present a client introduction token (nomad node intro create): node %s ("%s"): `, id, n)
	}

	t.Run("NewNodeWithoutTokenRefused", func(t *testing.T) {
		n := newNode("edge-1")
		must.EqError(t, o.register(n, ""), refused("edge-1", n.ID)+
			"no introduction token given (-client-intro-token, NOMAD_CLIENT_INTRO_TOKEN or <state_dir>/intro_token.jwt)")
		err := o.register(n, "not.a.token")
		must.ErrorContains(t, err, refused("edge-1", n.ID))
	})

	// A token the outsider mints over HTTP, with no credentials: refused
	// for another name, accepted for its own.
	mint := func(t *testing.T, name string) string {
		code, body := httpCall(t, "POST", srv.HTTPAddr()+"/v1/acl/identity/client-introduction-token", "", fmt.Sprintf(`{"NodeName":%q}`, name))
		must.Eq(t, http.StatusOK, code, must.Sprint(body))
		var resp struct{ JWT string }
		must.NoError(t, json.Unmarshal([]byte(body), &resp))
		return resp.JWT
	}
	t.Run("TokenForAnotherNameRefused", func(t *testing.T) {
		n := newNode("edge-2")
		must.EqError(t, o.register(n, mint(t, "edge-3")), refused("edge-2", n.ID)+`the token is for node name "edge-3", the node is named "edge-2"`)
	})
	t.Run("WithoutACLsMintsOwnToken", func(t *testing.T) {
		must.NoError(t, o.register(newNode("edge-4"), mint(t, "edge-4")))
		// The RPC port mints one as readily.
		var resp structs.ClientIntroductionTokenResponse
		must.NoError(t, o.call("ACL.CreateClientIntroductionToken", &structs.ClientIntroductionTokenRequest{NodeName: "edge-5"}, &resp))
		must.NoError(t, o.register(newNode("edge-5"), resp.JWT))
	})

	t.Run("ServerOnlyRPCsRefused", func(t *testing.T) {
		probeServerOnly(t, o, "", "needs the servers' identity, which this caller did not prove")
	})
	t.Run("RaftClosed", func(t *testing.T) {
		must.True(t, o.raftClosed(t), must.Sprint("a raft connection from an outsider kept open"))
	})
}
