// Package tlstest makes throwaway CAs and certificates on disk for tests
// of TLS between agents.
package tlstest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nomad-edge/nomad/helper/tlsutil"
)

// CA is a test CA whose files live in a temp dir.
type CA struct {
	Dir     string
	CAFile  string
	cert    []byte
	key     []byte
	counter int
}

// Pair is a certificate and key on disk, with the CA that signed it.
type Pair struct {
	CAFile, CertFile, KeyFile string
}

// NewCA makes a CA.
func NewCA(t testing.TB) *CA {
	t.Helper()
	cert, key, err := tlsutil.GenerateCA(tlsutil.CAInput{})
	if err != nil {
		t.Fatalf("generating CA: %v", err)
	}
	dir := t.TempDir()
	ca := &CA{Dir: dir, CAFile: filepath.Join(dir, "ca.pem"), cert: cert, key: key}
	write(t, ca.CAFile, cert)
	return ca
}

// Options change an issued certificate.
type Options struct {
	// NotBefore and Validity, when set, override the defaults (an expired
	// certificate: NotBefore two hours ago, Validity one hour).
	NotBefore time.Time
	Validity  time.Duration
	// DNSNames replace the role's names.
	DNSNames []string
}

// Issue writes a certificate of role for region signed by the CA.
func (ca *CA) Issue(t testing.TB, role tlsutil.Role, region string, opts Options) Pair {
	t.Helper()
	in, err := tlsutil.RoleCert(role, region)
	if err != nil {
		t.Fatal(err)
	}
	in.CA, in.CAKey = ca.cert, ca.key
	in.NotBefore, in.Validity = opts.NotBefore, opts.Validity
	if opts.DNSNames != nil {
		in.DNSNames = opts.DNSNames
	}
	cert, key, err := tlsutil.GenerateCert(in)
	if err != nil {
		t.Fatalf("issuing %s certificate: %v", role, err)
	}
	ca.counter++
	base := filepath.Join(ca.Dir, fmt.Sprintf("%s-%s-%d", role, region, ca.counter))
	p := Pair{CAFile: ca.CAFile, CertFile: base + ".pem", KeyFile: base + "-key.pem"}
	write(t, p.CertFile, cert)
	write(t, p.KeyFile, key)
	return p
}

// Config returns a tlsutil.Config for p with RPC and HTTP enabled and
// server names verified.
func (p Pair) Config(region string) *tlsutil.Config {
	return &tlsutil.Config{
		EnableRPC: true, EnableHTTP: true, VerifyServerHostname: true,
		CAFile: p.CAFile, CertFile: p.CertFile, KeyFile: p.KeyFile, Region: region,
	}
}

func write(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
