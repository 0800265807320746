package nomad

import (
	"crypto/x509"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/helper/clock/clocktest"
	"github.com/nomad-edge/nomad/helper/tlsutil"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// autoTLS turns tls.auto on for a test server.
func autoTLS(c *Config) { c.TLS = &tlsutil.Config{Auto: true, Region: c.Region} }

// TestTLSCA_FirstLeaderCreatesOne checks that the first leader of a
// tls.auto cluster makes one active CA whose key is sealed (not in the
// clear in raft) and signs certificates the CA verifies, and that a
// cluster without tls.auto makes none: the CA is what every agent's
// certificate hangs on.
func TestTLSCA_FirstLeaderCreatesOne(t *testing.T) {
	s := testServer(t, autoTLS)
	cas, err := s.State().TLSCAs(nil)
	must.NoError(t, err)
	must.SliceLen(t, 1, cas)
	ca := cas[0]
	must.True(t, ca.Active)
	must.NotEq(t, "", ca.Fingerprint)
	must.StrNotContains(t, string(ca.KeyCiphertext), "PRIVATE KEY")

	_, key, err := s.activeCAKey()
	must.NoError(t, err)
	csr, _, err := tlsutil.NewCSR("x")
	must.NoError(t, err)
	in, err := tlsutil.RoleCert(tlsutil.RoleClient, s.config.Region)
	must.NoError(t, err)
	certPEM, err := tlsutil.SignCSR(tlsutil.SignCSRInput{CA: ca.CertPEM, CAKey: key, CSR: csr, Cert: in})
	must.NoError(t, err)
	verifyAgainst(t, certPEM, ca.CertPEM)

	plain := testServer(t, nil)
	none, err := plain.State().ActiveTLSCA(nil)
	must.NoError(t, err)
	must.Nil(t, none)
	err = plain.RPC("Operator.TLSCARotate", &structs.TLSCARotateRequest{}, &structs.TLSCARotateResponse{})
	must.ErrorIs(t, err, structs.ErrInvalidRequest)
}

func verifyAgainst(t *testing.T, certPEM, caPEM []byte) {
	t.Helper()
	cert, err := tlsutil.ParseCert(certPEM)
	must.NoError(t, err)
	pool := x509.NewCertPool()
	must.True(t, pool.AppendCertsFromPEM(caPEM))
	_, err = cert.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: cert.NotBefore.Add(2 * time.Minute), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	must.NoError(t, err)
}

// TestTLSCA_Rotate checks rotation on a fake clock: the new CA is active,
// the old one stays trusted for one certificate lifetime (so agents
// holding its certificates are not cut off before they renew), and the
// rotation after that forgets it. The root key sealing a CA's key cannot
// be deleted, or the CA could no longer sign.
func TestTLSCA_Rotate(t *testing.T) {
	clk := clocktest.NewManual(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
	s := testServer(t, func(c *Config) { autoTLS(c); c.TLS.AutoCertTTL = time.Hour; c.Clock = clk })
	first, err := s.State().ActiveTLSCA(nil)
	must.NoError(t, err)

	var rot structs.TLSCARotateResponse
	must.NoError(t, s.RPC("Operator.TLSCARotate", &structs.TLSCARotateRequest{}, &rot))
	must.NotEq(t, first.ID, rot.CA.ID)
	var list structs.TLSCAListResponse
	must.NoError(t, s.RPC("Operator.TLSCAList", &structs.TLSCAListRequest{}, &list))
	must.SliceLen(t, 2, list.CAs)
	must.Eq(t, rot.CA.ID, list.CAs[0].ID)
	must.True(t, list.CAs[0].Active)
	must.False(t, list.CAs[1].Active)
	must.Eq(t, clk.Now().Add(time.Hour), list.CAs[1].RetireAfter)

	cas, err := s.State().TLSCAs(nil)
	must.NoError(t, err)
	must.SliceLen(t, 2, trustedCAs(cas, clk.Now().Add(59*time.Minute)))
	must.SliceLen(t, 1, trustedCAs(cas, clk.Now().Add(time.Hour)))

	var keyRot structs.KeyringRotateRootKeyResponse
	must.NoError(t, s.RPC("Keyring.Rotate", &structs.KeyringRotateRootKeyRequest{}, &keyRot))
	err = s.RPC("Keyring.Delete", &structs.KeyringDeleteRootKeyRequest{KeyID: first.KeyID}, &structs.KeyringDeleteRootKeyResponse{})
	must.ErrorContains(t, err, "rotate the CA first")

	clk.Advance(time.Hour)
	must.NoError(t, s.RPC("Operator.TLSCARotate", &structs.TLSCARotateRequest{}, &rot))
	cas, err = s.State().TLSCAs(nil)
	must.NoError(t, err)
	must.SliceLen(t, 2, cas)
	for _, ca := range cas {
		must.NotEq(t, first.ID, ca.ID)
	}
	// The newest CA's key is sealed with the new root key.
	must.Eq(t, keyRot.Key.KeyID, cas[0].KeyID)
}
