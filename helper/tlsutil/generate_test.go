package tlsutil_test

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/helper/tlsutil"
)

// tlsutil.SignCSR takes only the request's public key: the names and lifetime are
// the signer's, so a node cannot ask for a server's name; and the
// certificate never outlives its CA.
func TestSignCSR_SignerDecidesNames(t *testing.T) {
	now := time.Now()
	caPEM, caKey, err := tlsutil.GenerateCA(tlsutil.CAInput{NotBefore: now.Add(-time.Minute), Validity: 2 * time.Hour})
	must.NoError(t, err)
	csr, _, err := tlsutil.NewCSR(tlsutil.ServerName("global"))
	must.NoError(t, err)
	in, err := tlsutil.RoleCert(tlsutil.RoleClient, "global")
	must.NoError(t, err)
	in.CommonName, in.Validity = "node-1", 24*time.Hour
	certPEM, err := tlsutil.SignCSR(tlsutil.SignCSRInput{CA: caPEM, CAKey: caKey, CSR: csr, Cert: in})
	must.NoError(t, err)
	cert, err := tlsutil.ParseCert(certPEM)
	must.NoError(t, err)
	must.Eq(t, "node-1", cert.Subject.CommonName)
	must.SliceNotContains(t, cert.DNSNames, tlsutil.ServerName("global"))
	ca, err := tlsutil.ParseCert(caPEM)
	must.NoError(t, err)
	must.Eq(t, ca.NotAfter, cert.NotAfter)
	fp, err := tlsutil.Fingerprint(caPEM)
	must.NoError(t, err)
	must.Len(t, 64, []byte(fp))

	_, err = tlsutil.SignCSR(tlsutil.SignCSRInput{CA: caPEM, CAKey: caKey, CSR: []byte("junk"), Cert: in})
	must.ErrorContains(t, err, "no PEM certificate request")
}
