package nomad

import (
	"errors"
	"fmt"
	"strings"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// Client introduction (upstream 1.11's client introduction tokens): an
// operator with node:write creates a short-lived token, signed by the
// keyring like a workload identity, scoped to a node pool and optionally a
// node name; a new node presents it once, in its first Node.Register, and
// from then on proves itself with its own node secret, which that
// registration binds to its node ID. server.client_introduction's
// enforcement says what a registration of a new node without a valid
// token gets: refused (strict), registered with a warning (warn, the
// default, as upstream) or registered (none). A node the servers already
// know re-registers with its secret alone.

// CreateClientIntroductionToken signs a client introduction token. It
// needs node:write.
func (a *ACL) CreateClientIntroductionToken(args *structs.ClientIntroductionTokenRequest, reply *structs.ClientIntroductionTokenResponse) error {
	if done, err := a.srv.forward("ACL.CreateClientIntroductionToken", args, reply); done {
		return err
	}
	if err := a.srv.authorize(args.AuthToken, permNodeWrite); err != nil {
		return err
	}
	cfg := a.srv.config.ClientIntroduction
	ttl := args.TTL
	switch {
	case ttl == 0:
		ttl = cfg.DefaultTTL
	case ttl < 0:
		return fmt.Errorf("%w: TTL %s must be positive", structs.ErrInvalidRequest, ttl)
	case ttl > cfg.MaxTTL:
		return fmt.Errorf("%w: TTL %s is longer than the server's max_identity_ttl (%s)", structs.ErrInvalidRequest, ttl, cfg.MaxTTL)
	}
	pool := args.NodePool
	if pool == "" {
		pool = structs.DefaultNodePool
	}
	if pool == structs.NodePoolAll {
		return fmt.Errorf("%w: NodePool %q holds every node; a node cannot join it", structs.ErrInvalidRequest, pool)
	}
	if strings.Contains(args.NodeName, ":") {
		return fmt.Errorf("%w: NodeName %q must not contain %q", structs.ErrInvalidRequest, args.NodeName, ":")
	}
	active, err := a.srv.State().ActiveRootKeyMeta(nil)
	if err != nil {
		return err
	}
	if active == nil {
		return fmt.Errorf("%w: the keyring has no active root key yet", structs.ErrUnknownRootKey)
	}
	now := a.srv.clock.Now()
	claims := &structs.IdentityClaims{
		NodeName: args.NodeName, NodePool: pool,
		Subject:  structs.IntroSubjectPrefix + strings.Join([]string{a.srv.config.Region, pool, args.NodeName, "default"}, ":"),
		Audience: []string{"nomadproject.io"}, IssuedAt: now.Unix(), NotBefore: now.Unix(), Expiry: now.Add(ttl).Unix(),
		ID: structs.GenerateUUID(),
	}
	if a.srv.autoTLSOn() {
		ca, err := a.srv.State().ActiveTLSCA(nil)
		if err != nil {
			return err
		}
		if ca == nil {
			return fmt.Errorf("%w: the cluster has no TLS CA yet (tls.auto): retry once a leader has made it", structs.ErrInvalidRequest)
		}
		claims.TLSCAFingerprint = ca.Fingerprint
	}
	reply.JWT, err = a.srv.encrypter.signClaims(active.KeyID, claims)
	return err
}

// checkIntroduction applies the enforcement mode to the registration of
// node, which the servers do not know yet, with token (the request's
// AuthToken).
func (s *Server) checkIntroduction(node *structs.Node, token string) error {
	mode := s.config.ClientIntroduction.Enforcement
	if mode == structs.IntroEnforcementNone {
		return nil
	}
	err := s.verifyIntroduction(node, token)
	if err == nil {
		return nil
	}
	if mode == structs.IntroEnforcementStrict {
		return fmt.Errorf("%w: node %s (%q): %w", structs.ErrIntroductionRequired, node.ID, node.Name, err)
	}
	s.logger.Warn("registering a new node without a valid introduction token (server.client_introduction.enforcement = \"warn\")",
		"node_id", node.ID, "node_name", node.Name, "node_pool", node.NodePool, "reason", err)
	return nil
}

// errNoIntroToken is a registration that carried no token at all.
var errNoIntroToken = errors.New("no introduction token given (-client-intro-token, NOMAD_CLIENT_INTRO_TOKEN or <state_dir>/intro_token.jwt)")

// verifyIntroduction says why token does not introduce node, or nil.
func (s *Server) verifyIntroduction(node *structs.Node, token string) error {
	if token == "" {
		return errNoIntroToken
	}
	c, err := s.encrypter.verifyClaims(token, s.clock.Now())
	if err != nil {
		return err
	}
	switch {
	case !strings.HasPrefix(c.Subject, structs.IntroSubjectPrefix) || c.AllocationID != "":
		return errors.New("the token is not a client introduction token")
	case c.NodePool != node.NodePool:
		return fmt.Errorf("the token is for node pool %q, the node asks for %q", c.NodePool, node.NodePool)
	case c.NodeName != "" && c.NodeName != node.Name:
		return fmt.Errorf("the token is for node name %q, the node is named %q", c.NodeName, node.Name)
	}
	return nil
}
