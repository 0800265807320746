package nomad

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// introToken asks s for an introduction token.
func introToken(t *testing.T, s *Server, req *structs.ClientIntroductionTokenRequest) string {
	t.Helper()
	var resp structs.ClientIntroductionTokenResponse
	must.NoError(t, s.RPC("ACL.CreateClientIntroductionToken", req, &resp))
	must.StrContains(t, resp.JWT, ".")
	return resp.JWT
}

// registerWith registers node presenting token.
func registerWith(s *Server, node *structs.Node, token string) error {
	var resp structs.NodeUpdateResponse
	return s.RPC("Node.Register", &structs.NodeRegisterRequest{Node: node, WriteRequest: structs.WriteRequest{AuthToken: token}}, &resp)
}

// Under enforcement "strict" a new node registers only with a valid
// introduction token for its pool (and name, when the token names one),
// before the token expires; once registered, it re-registers with its own
// secret and no token. Anyone reaching the RPC port could otherwise add a
// ready node of any class and size and take work (issue 26, item 1).
func TestNodeIntro_StrictRefusesNewNodeWithoutToken(t *testing.T) {
	clk := newManualClock()
	s := testServer(t, func(c *Config) {
		c.Clock = clk
		c.NumSchedulers = 0
		c.ClientIntroduction.Enforcement = structs.IntroEnforcementStrict
	})

	node := mock.Node()
	node.Name = "edge-1"
	err := registerWith(s, node, "")
	must.ErrorIs(t, err, structs.ErrIntroductionRequired)
	must.ErrorIs(t, err, structs.ErrPermissionDenied)
	must.ErrorContains(t, err, "no introduction token given")
	err = registerWith(s, node, "not.a.token")
	must.ErrorIs(t, err, structs.ErrIntroductionRequired)

	other := introToken(t, s, &structs.ClientIntroductionTokenRequest{NodeName: "edge-2"})
	must.ErrorContains(t, registerWith(s, node, other), `the token is for node name "edge-2"`)
	elsewhere := introToken(t, s, &structs.ClientIntroductionTokenRequest{NodePool: "platform"})
	must.ErrorContains(t, registerWith(s, node, elsewhere), `the token is for node pool "platform"`)

	stale := introToken(t, s, &structs.ClientIntroductionTokenRequest{NodeName: "edge-1", TTL: time.Minute})
	clk.Advance(2 * time.Minute)
	must.ErrorContains(t, registerWith(s, node, stale), "expired")

	good := introToken(t, s, &structs.ClientIntroductionTokenRequest{NodeName: "edge-1"})
	must.NoError(t, registerWith(s, node, good))
	stored, err := s.State().NodeByID(nil, node.ID)
	must.NoError(t, err)
	must.NotNil(t, stored)

	// The token was exchanged for the node's own secret: re-registering
	// takes the secret, not a token.
	must.NoError(t, registerWith(s, node, ""))
	stolen := node.Copy()
	stolen.SecretID = "another-secret"
	must.ErrorIs(t, registerWith(s, stolen, good), structs.ErrNodeSecretMismatch)

	// A TTL past max_identity_ttl is refused naming the field.
	var resp structs.ClientIntroductionTokenResponse
	err = s.RPC("ACL.CreateClientIntroductionToken", &structs.ClientIntroductionTokenRequest{TTL: time.Hour}, &resp)
	must.ErrorIs(t, err, structs.ErrInvalidRequest)
	must.ErrorContains(t, err, "max_identity_ttl")
}

// Under "warn" (the default, as upstream) a new node without a token is
// registered; under "none" too.
func TestNodeIntro_WarnAndNoneRegister(t *testing.T) {
	for _, mode := range []string{structs.IntroEnforcementWarn, structs.IntroEnforcementNone} {
		s := testServer(t, func(c *Config) { c.NumSchedulers = 0; c.ClientIntroduction.Enforcement = mode })
		must.NoError(t, registerWith(s, mock.Node(), ""), must.Sprint(mode))
	}
	must.Eq(t, structs.IntroEnforcementWarn, DefaultConfig().ClientIntroduction.Enforcement)
}
