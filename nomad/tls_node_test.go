package nomad

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/helper/tlsutil"
	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// issueCert asks s for node's certificate with req's proof.
func issueCert(s *Server, node *structs.Node, req structs.NodeCertRequest) (*structs.NodeCertResponse, error) {
	csr, _, err := tlsutil.NewCSR("ignored")
	if err != nil {
		return nil, err
	}
	req.NodeID, req.CSR, req.AuthToken = node.ID, csr, node.SecretID
	var resp structs.NodeCertResponse
	return &resp, s.RPC("Node.IssueCert", &req, &resp)
}

// TestNodeCert_IssueRenewRevoke checks a node's certificate life on a
// fake clock: an introduced node gets one (named by its node ID, signed
// by the cluster CA, living tls.auto_cert_ttl) and renews with it; a node
// without its token or its current certificate gets none, nor does one
// whose certificate expired while it stayed ready, nor a purged node.
// A certificate is what lets a node call the servers under tls.auto.
func TestNodeCert_IssueRenewRevoke(t *testing.T) {
	clk := newManualClock()
	s := testServer(t, func(c *Config) {
		autoTLS(c)
		c.TLS.AutoCertTTL = time.Hour
		c.Clock = clk
		c.NumSchedulers = 0
	})
	token := introToken(t, s, &structs.ClientIntroductionTokenRequest{TTL: 10 * time.Minute})
	node := mock.Node()
	must.NoError(t, registerWith(s, node, token))

	_, err := issueCert(s, node, structs.NodeCertRequest{})
	must.ErrorIs(t, err, structs.ErrNodeCertRefused)
	stranger := *node
	stranger.SecretID = structs.GenerateUUID()
	_, err = issueCert(s, &stranger, structs.NodeCertRequest{IntroToken: token})
	must.ErrorIs(t, err, structs.ErrNodeSecretMismatch)

	first, err := issueCert(s, node, structs.NodeCertRequest{IntroToken: token})
	must.NoError(t, err)
	must.SliceLen(t, 1, first.CAs)
	cert, err := tlsutil.ParseCert(first.CertPEM)
	must.NoError(t, err)
	must.Eq(t, node.ID, cert.Subject.CommonName)
	must.Eq(t, clk.Now().Add(time.Hour), cert.NotAfter.Round(time.Second))
	verifyAgainst(t, first.CertPEM, first.CAs[0])

	// Past the introduction token's life, the certificate renews it.
	clk.Advance(30 * time.Minute)
	renewed, err := issueCert(s, node, structs.NodeCertRequest{CurrentCert: first.CertPEM})
	must.NoError(t, err)

	// Cut off past its certificate's life while ready (no window): refused.
	clk.Advance(2 * time.Hour)
	_, err = issueCert(s, node, structs.NodeCertRequest{CurrentCert: renewed.CertPEM})
	must.ErrorIs(t, err, structs.ErrNodeCertRefused)
	must.ErrorContains(t, err, "no disconnect window open")

	// Another cluster's certificate for the same node ID: refused.
	otherCA, otherKey, err := tlsutil.GenerateCA(tlsutil.CAInput{NotBefore: clk.Now().Add(-time.Minute)})
	must.NoError(t, err)
	in, err := s.nodeCertInput(node.ID)
	must.NoError(t, err)
	csr, _, err := tlsutil.NewCSR("x")
	must.NoError(t, err)
	forged, err := tlsutil.SignCSR(tlsutil.SignCSRInput{CA: otherCA, CAKey: otherKey, CSR: csr, Cert: in})
	must.NoError(t, err)
	_, err = issueCert(s, node, structs.NodeCertRequest{CurrentCert: forged})
	must.ErrorContains(t, err, "does not verify against this cluster's CAs")

	// Purged: revoked, whatever the certificate.
	fresh, err := issueCert(s, node, structs.NodeCertRequest{CurrentCert: forged, IntroToken: token})
	must.Error(t, err)
	must.Nil(t, fresh.CertPEM)
	must.NoError(t, s.RPC("Node.Purge", &structs.NodePurgeRequest{NodeID: node.ID}, &structs.NodePurgeResponse{}))
	_, err = issueCert(s, node, structs.NodeCertRequest{CurrentCert: renewed.CertPEM})
	must.ErrorIs(t, err, structs.ErrNodeCertRefused)
}

// TestVerifyNodeCert_DisconnectWindow checks the rule that keeps TLS from
// defeating disconnect windows: a node cut off past its certificate's life
// may renew with the expired certificate while it is disconnected with an
// allocation inside its window, and not once the window has passed, nor
// once it is down.
func TestVerifyNodeCert_DisconnectWindow(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	caPEM, caKey, err := tlsutil.GenerateCA(tlsutil.CAInput{NotBefore: now.Add(-48 * time.Hour)})
	must.NoError(t, err)
	node := mock.Node()
	in, err := tlsutil.RoleCert(tlsutil.RoleClient, "global")
	must.NoError(t, err)
	in.CommonName, in.NotBefore, in.Validity = node.ID, now.Add(-25*time.Hour), 24*time.Hour
	csr, _, err := tlsutil.NewCSR("x")
	must.NoError(t, err)
	certPEM, err := tlsutil.SignCSR(tlsutil.SignCSRInput{CA: caPEM, CAKey: caKey, CSR: csr, Cert: in})
	must.NoError(t, err)
	cert, err := tlsutil.ParseCert(certPEM)
	must.NoError(t, err)

	// Unknown since 2h ago, window 3h: open until now+1h.
	alloc := mock.Alloc()
	alloc.NodeID = node.ID
	alloc.ClientStatus = structs.AllocClientStatusUnknown
	alloc.AllocStates = []*structs.AllocState{{Field: structs.AllocStateFieldClientStatus, Value: structs.AllocClientStatusUnknown, Time: now.Add(-2 * time.Hour)}}
	alloc.Job.TaskGroups[0].Disconnect = &structs.DisconnectStrategy{LostAfter: 3 * time.Hour}
	check := func(status string, at time.Time) (bool, error) {
		n := node.Copy()
		n.Status = status
		return verifyNodeCert(nodeCertCheck{Cert: cert, NodeID: node.ID, Region: "global", Roots: [][]byte{caPEM}, Now: at, Node: n, Allocs: []*structs.Allocation{alloc}})
	}

	expired, err := check(structs.NodeStatusDisconnected, now)
	must.NoError(t, err)
	must.True(t, expired)
	_, err = check(structs.NodeStatusDisconnected, now.Add(time.Hour))
	must.ErrorIs(t, err, structs.ErrNodeCertRefused)
	_, err = check(structs.NodeStatusDown, now)
	must.ErrorIs(t, err, structs.ErrNodeCertRefused)
	expired, err = check(structs.NodeStatusReady, now.Add(-2*time.Hour))
	must.NoError(t, err)
	must.False(t, expired)

	_, err = verifyNodeCert(nodeCertCheck{Cert: cert, NodeID: node.ID, Region: "global", Roots: [][]byte{caPEM}, Now: now})
	must.ErrorContains(t, err, "not known to the servers")
	_, err = verifyNodeCert(nodeCertCheck{Cert: cert, NodeID: "other", Region: "global", Roots: [][]byte{caPEM}, Now: now, Node: node})
	must.ErrorContains(t, err, "is not node other's")
}

// TestNodeIntro_TokenPinsTLSCA checks that an introduction token of a
// tls.auto cluster carries the active CA's fingerprint, so a new node can
// tell the real servers from an impostor before it holds the CA, and that
// a token of a cluster without tls.auto carries none.
func TestNodeIntro_TokenPinsTLSCA(t *testing.T) {
	clk := newManualClock()
	s := testServer(t, func(c *Config) { autoTLS(c); c.Clock = clk })
	ca, err := s.State().ActiveTLSCA(nil)
	must.NoError(t, err)
	claims, err := s.encrypter.verifyClaims(introToken(t, s, &structs.ClientIntroductionTokenRequest{}), clk.Now())
	must.NoError(t, err)
	must.Eq(t, ca.Fingerprint, claims.TLSCAFingerprint)
	fp, err := tlsutil.Fingerprint(ca.CertPEM)
	must.NoError(t, err)
	must.Eq(t, fp, claims.TLSCAFingerprint)

	plain := testServer(t, func(c *Config) { c.Clock = clk })
	claims, err = plain.encrypter.verifyClaims(introToken(t, plain, &structs.ClientIntroductionTokenRequest{}), clk.Now())
	must.NoError(t, err)
	must.Eq(t, "", claims.TLSCAFingerprint)
}
