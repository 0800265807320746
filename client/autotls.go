package client

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nomad-edge/nomad/helper/pool"
	"github.com/nomad-edge/nomad/helper/tlsutil"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// A node's side of tls.auto: the key it made and keeps, the certificate
// the servers signed for it (Node.IssueCert), and the cluster CAs it
// trusts for the servers, under <state dir>/tls. A new node has none of
// them: it checks the servers by the CA fingerprint its introduction
// token carries (nomad_tls_ca_sha256), registers without a certificate
// (all the servers let it do), then asks for its first one, proved by its
// secret and its token. From then on every connection presents the
// certificate, and the node renews it at half its life, and at once when
// it comes back from an outage with it expired: the servers renew an
// expired one only while the node's disconnect window is open.

// Files under AutoTLS's directory.
const (
	autoTLSCertFile = "node.pem"
	autoTLSKeyFile  = "node-key.pem"
	autoTLSCAFile   = "ca.pem"
)

// methodIssueCert is the RPC that signs a node's certificate.
const methodIssueCert = "Node.IssueCert"

// AutoTLS holds a node's credentials of tls.auto. The agent makes it
// before the connection pool (whose TLS configuration and Credentials it
// is) and hands it to the client, which fetches and renews the
// certificate. Safe for concurrent use.
type AutoTLS struct {
	dir    string
	region string
	// introToken returns the introduction token the node was given, read
	// when a new node needs to pin the servers.
	introToken func() string

	mu    sync.RWMutex
	cert  *tls.Certificate // nil until the first is issued
	roots [][]byte         // the CAs the servers named, PEM
	gen   atomic.Uint64
}

var _ pool.Credentials = (*AutoTLS)(nil)

// AutoTLSConfig is the input of LoadAutoTLS.
type AutoTLSConfig struct {
	// StateDir is the client's state dir: the credentials live in its
	// tls directory.
	StateDir string
	Region   string
	// IntroToken is the configured introduction token; when empty,
	// <StateDir>/intro_token.jwt is read, as at registration.
	IntroToken string
	Logger     hclog.Logger
}

// LoadAutoTLS reads the credentials a node kept, if any. Files that are
// there but cannot be used are an error naming them: a node that lost
// its certificate must be introduced again, which an operator decides.
func LoadAutoTLS(cfg AutoTLSConfig) (*AutoTLS, error) {
	logger := cfg.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	if cfg.Region == "" {
		cfg.Region = structs.DefaultRegion
	}
	a := &AutoTLS{
		dir:        filepath.Join(cfg.StateDir, "tls"),
		region:     cfg.Region,
		introToken: func() string { return readIntroToken(cfg.IntroToken, cfg.StateDir, logger) },
	}
	certPEM, err := os.ReadFile(filepath.Join(a.dir, autoTLSCertFile))
	if errors.Is(err, os.ErrNotExist) {
		return a, nil
	}
	if err != nil {
		return nil, fmt.Errorf("tls.auto: %w", err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(a.dir, autoTLSKeyFile))
	if err != nil {
		return nil, fmt.Errorf("tls.auto: the node's certificate has no key: %w", err)
	}
	caPEM, err := os.ReadFile(filepath.Join(a.dir, autoTLSCAFile))
	if err != nil {
		return nil, fmt.Errorf("tls.auto: the node's certificate has no CA: %w", err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("tls.auto: %s and %s: %w", filepath.Join(a.dir, autoTLSCertFile), autoTLSKeyFile, err)
	}
	roots := tlsutil.SplitCertPEM(caPEM)
	if len(roots) == 0 {
		return nil, fmt.Errorf("tls.auto: %s holds no certificate", filepath.Join(a.dir, autoTLSCAFile))
	}
	a.cert, a.roots = &pair, roots
	return a, nil
}

// Generation implements pool.Credentials: it grows with every
// certificate stored, so that the pool dials afresh with it.
func (a *AutoTLS) Generation() uint64 { return a.gen.Load() }

// ClientTLS is the connection pool's TLS configuration: the node's
// certificate when it has one, and the servers checked against the CAs
// they named, or before that, against the token's fingerprint.
func (a *AutoTLS) ClientTLS() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		ServerName: tlsutil.ServerName(a.region),
		// The chain is checked by VerifyConnection, against roots that
		// change as the node learns them.
		InsecureSkipVerify: true,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			a.mu.RLock()
			defer a.mu.RUnlock()
			if a.cert == nil {
				return &tls.Certificate{}, nil // anonymous: registration and the first certificate only
			}
			return a.cert, nil
		},
		VerifyConnection: a.verifyServer,
	}
}

// verifyServer checks the servers' chain: a server's certificate of this
// region, signed by a CA the node trusts (the servers', or the one whose
// SHA-256 the introduction token names, sent in the chain).
func (a *AutoTLS) verifyServer(cs tls.ConnectionState) error {
	chain := cs.PeerCertificates
	if len(chain) == 0 {
		return errors.New("tls.auto: the server presented no certificate")
	}
	a.mu.RLock()
	roots := slices.Clone(a.roots)
	a.mu.RUnlock()
	pool := x509.NewCertPool()
	for _, r := range roots {
		pool.AppendCertsFromPEM(r)
	}
	if len(roots) == 0 {
		pin, err := a.pin()
		if err != nil {
			return err
		}
		for _, c := range chain[1:] {
			if tlsutil.FingerprintDER(c.Raw) == pin {
				pool.AddCert(c)
			}
		}
	}
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	_, err := chain[0].Verify(x509.VerifyOptions{
		DNSName: tlsutil.ServerName(a.region), Roots: pool, Intermediates: inter,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	if err != nil {
		return fmt.Errorf("tls.auto: the server's certificate: %w", err)
	}
	return nil
}

// pin is the CA fingerprint of the node's introduction token.
func (a *AutoTLS) pin() (string, error) {
	tok := a.introToken()
	if tok == "" {
		return "", errors.New("tls.auto: this node holds no CA and no introduction token to check the servers by: give it one (nomad node intro create)")
	}
	jwt, err := structs.DecodeJWT(tok)
	if err != nil {
		return "", fmt.Errorf("tls.auto: the introduction token: %w", err)
	}
	if jwt.Claims.TLSCAFingerprint == "" {
		return "", errors.New("tls.auto: the introduction token names no cluster CA (nomad_tls_ca_sha256): it was made by servers without tls.auto")
	}
	return jwt.Claims.TLSCAFingerprint, nil
}

// held returns the node's certificate, or nil.
func (a *AutoTLS) held() *x509.Certificate {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.cert == nil {
		return nil
	}
	return a.cert.Leaf
}

// renewDue reports whether the node's certificate must be renewed at
// now: from half its life on, expired included.
func renewDue(leaf *x509.Certificate, now time.Time) bool {
	half := leaf.NotBefore.Add(leaf.NotAfter.Sub(leaf.NotBefore) / 2)
	return !now.Before(half)
}

// store keeps a certificate the servers signed for the key keyPEM, and
// the CAs they named, on disk first (each file replaced whole), then for
// the connections dialed from now on.
func (a *AutoTLS) store(resp *structs.NodeCertResponse, keyPEM []byte) error {
	if len(resp.CAs) == 0 {
		return errors.New("tls.auto: the servers named no CA")
	}
	pair, err := tls.X509KeyPair(resp.CertPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("tls.auto: the signed certificate: %w", err)
	}
	if err := os.MkdirAll(a.dir, 0o700); err != nil {
		return fmt.Errorf("tls.auto: %w", err)
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{autoTLSKeyFile, keyPEM}, {autoTLSCertFile, resp.CertPEM}, {autoTLSCAFile, slices.Concat(resp.CAs...)}} {
		if err := writeFileAtomic(filepath.Join(a.dir, f.name), f.data); err != nil {
			return fmt.Errorf("tls.auto: %w", err)
		}
	}
	a.mu.Lock()
	a.cert, a.roots = &pair, slices.Clone(resp.CAs)
	a.mu.Unlock()
	a.gen.Add(1)
	return nil
}

// writeFileAtomic replaces path with data (mode 0600), never leaving it
// half written.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// refreshCert gets the node its certificate of tls.auto when it holds
// none (its first, proved by its introduction token: the node must be
// registered), or renews the one it holds when due (proved by that
// certificate). Without tls.auto it does nothing.
func (c *Client) refreshCert() error {
	a := c.cfg.AutoTLS
	if a == nil {
		return nil
	}
	leaf := a.held()
	if leaf != nil && !renewDue(leaf, c.clock.Now()) {
		return nil
	}
	csr, keyPEM, err := tlsutil.NewCSR(c.NodeID())
	if err != nil {
		return err
	}
	req := &structs.NodeCertRequest{
		NodeID: c.NodeID(), CSR: csr,
		WriteRequest: structs.WriteRequest{Region: c.cfg.Region, AuthToken: c.secretID()},
	}
	if leaf != nil {
		req.CurrentCert = tlsutil.EncodeCert(leaf)
	} else {
		req.IntroToken = c.introToken()
	}
	var resp structs.NodeCertResponse
	if err := c.rpc(methodIssueCert, req, &resp); err != nil {
		return fmt.Errorf("tls.auto certificate: %w", err)
	}
	if err := a.store(&resp, keyPEM); err != nil {
		return err
	}
	held := a.held()
	c.logger.Info("tls.auto: node certificate stored", "renewal", leaf != nil, "expires", held.NotAfter.UTC().Format(time.RFC3339))
	return nil
}

// registerWithCert registers the node as tls.auto has it: a node that
// holds a certificate renews it first when due (an expired one can do
// nothing else) and registers with it; a new one registers without (the
// servers let an unknown node do that and no more) and then gets its
// first certificate. A node they know already that lost its certificate
// (stopped between the two) gets it with its token, not registered again.
func (c *Client) registerWithCert() error {
	a := c.cfg.AutoTLS
	if a == nil {
		return c.register()
	}
	if a.held() != nil {
		if err := c.refreshCert(); err != nil {
			return err
		}
		return c.register()
	}
	regErr := c.register()
	if regErr != nil && !errors.Is(regErr, structs.ErrNodeCertRefused) {
		return regErr
	}
	if err := c.refreshCert(); err != nil {
		return err
	}
	if regErr != nil {
		return c.register() // with the certificate, this time
	}
	return nil
}
