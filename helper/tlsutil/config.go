package tlsutil

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"
)

// Config is the agent's `tls` block, as far as building TLS configurations
// needs it.
type Config struct {
	// EnableHTTP serves the HTTP API over HTTPS; EnableRPC carries RPC and
	// raft over TLS and refuses plaintext connections.
	EnableHTTP bool
	EnableRPC  bool

	CAFile   string
	CertFile string
	KeyFile  string

	// VerifyServerHostname makes outgoing RPC check that the server's
	// certificate names server.<Region>.nomad, so a client certificate
	// cannot pose as a server. Without it any certificate of the CA passes.
	VerifyServerHostname bool
	// VerifyHTTPSClient requires HTTPS callers to present a certificate
	// signed by the CA.
	VerifyHTTPSClient bool

	// MinVersion is tls.VersionTLS12 (the default, when zero) or
	// tls.VersionTLS13.
	MinVersion uint16

	// Region names the servers' certificates (server.<Region>.nomad).
	Region string

	// Auto is automatic mutual TLS (tls.auto): the servers hold a cluster
	// CA in raft and issue every agent its certificate, which lives
	// AutoCertTTL (DefaultAutoCertTTL when zero). It excludes the file
	// settings above (CheckAuto).
	Auto        bool
	AutoCertTTL time.Duration
}

// DefaultAutoCertTTL is how long a certificate of tls.auto lives: short,
// so that a stolen one is soon worthless, and renewed at half its life.
const DefaultAutoCertTTL = 24 * time.Hour

// CertTTL is the lifetime of the certificates tls.auto issues.
func (c *Config) CertTTL() time.Duration {
	if c == nil || c.AutoCertTTL <= 0 {
		return DefaultAutoCertTTL
	}
	return c.AutoCertTTL
}

// CheckAuto refuses tls.auto combined with the settings it replaces,
// naming them: the certificates and the CA are the cluster's own, and
// RPC TLS is what it turns on.
func (c *Config) CheckAuto() error {
	if !c.Auto {
		if c.AutoCertTTL != 0 {
			return errors.New("tls.auto_cert_ttl is set but tls.auto is not")
		}
		return nil
	}
	var errs []error
	for _, f := range []struct {
		key string
		set bool
	}{
		{"tls.rpc", c.EnableRPC}, {"tls.http", c.EnableHTTP}, {"tls.ca_file", c.CAFile != ""},
		{"tls.cert_file", c.CertFile != ""}, {"tls.key_file", c.KeyFile != ""},
		{"tls.verify_https_client", c.VerifyHTTPSClient},
	} {
		if f.set {
			errs = append(errs, fmt.Errorf("%s cannot be combined with tls.auto = true: tls.auto issues the agents' RPC certificates from the cluster's own CA (remove %s, or tls.auto to use operator-supplied certificates)", f.key, f.key))
		}
	}
	if c.AutoCertTTL < 0 || (c.AutoCertTTL > 0 && c.AutoCertTTL < 10*time.Minute) {
		errs = append(errs, fmt.Errorf("tls.auto_cert_ttl %s must be at least 10m", c.AutoCertTTL))
	}
	return errors.Join(errs...)
}

// ErrNoCA is returned when TLS is enabled without a CA to verify peers.
var ErrNoCA = errors.New("tls: ca_file is required to verify peers")

// ServerName is the DNS name every server certificate of region carries.
func ServerName(region string) string { return "server." + region + ".nomad" }

// ClientName is the DNS name every client certificate of region carries.
func ClientName(region string) string { return "client." + region + ".nomad" }

// CLIName is the DNS name of a CLI user's certificate for region.
func CLIName(region string) string { return "cli." + region + ".nomad" }

// Check reports a tls block that cannot work: files missing or
// unreadable, a certificate that does not match its key, a CA file with
// no certificate in it. Errors name the config key.
func (c *Config) Check() error {
	if !c.EnableHTTP && !c.EnableRPC {
		return nil
	}
	var errs []error
	for _, f := range []struct{ key, path string }{
		{"tls.ca_file", c.CAFile}, {"tls.cert_file", c.CertFile}, {"tls.key_file", c.KeyFile},
	} {
		if f.path == "" {
			errs = append(errs, fmt.Errorf("%s is required when tls.http or tls.rpc is enabled", f.key))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if _, err := c.caPool(); err != nil {
		errs = append(errs, err)
	}
	if _, err := c.keyPair(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (c *Config) caPool() (*x509.CertPool, error) {
	if c.CAFile == "" {
		return nil, ErrNoCA
	}
	pem, err := os.ReadFile(c.CAFile)
	if err != nil {
		return nil, fmt.Errorf("tls.ca_file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("tls.ca_file %s: no PEM certificate in it", c.CAFile)
	}
	return pool, nil
}

func (c *Config) keyPair() (tls.Certificate, error) {
	cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tls.cert_file %s / tls.key_file %s: %w", c.CertFile, c.KeyFile, err)
	}
	return cert, nil
}

func (c *Config) minVersion() uint16 {
	if c.MinVersion == 0 {
		return tls.VersionTLS12
	}
	return c.MinVersion
}

// IncomingRPC is the server side of RPC and raft: the peer must present a
// certificate signed by the CA (mutual TLS), whatever its role; which role
// it has is read from the certificate afterwards (IsServer).
func (c *Config) IncomingRPC() (*tls.Config, error) {
	pool, err := c.caPool()
	if err != nil {
		return nil, err
	}
	cert, err := c.keyPair()
	if err != nil {
		return nil, err
	}
	return &tls.Config{
		MinVersion:   c.minVersion(),
		Certificates: []tls.Certificate{cert},
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
	}, nil
}

// OutgoingRPC is the dialing side of RPC and raft. The agent always
// presents its own certificate and checks the server's against the CA;
// with VerifyServerHostname it also requires server.<region>.nomad.
func (c *Config) OutgoingRPC() (*tls.Config, error) {
	pool, err := c.caPool()
	if err != nil {
		return nil, err
	}
	cert, err := c.keyPair()
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{
		MinVersion:   c.minVersion(),
		Certificates: []tls.Certificate{cert},
		RootCAs:      pool,
	}
	if c.VerifyServerHostname {
		cfg.ServerName = ServerName(c.Region)
		return cfg, nil
	}
	// Servers are dialled by IP, which their certificates need not name:
	// check the chain alone. crypto/tls skips all checks when asked to
	// skip the name, so the chain is verified here instead.
	cfg.InsecureSkipVerify = true
	cfg.VerifyConnection = func(cs tls.ConnectionState) error { return verifyChain(cs, pool) }
	return cfg, nil
}

// IncomingHTTPS is the HTTP API's side. Client certificates are asked for
// always (so a CLI certificate is checked when offered) and required with
// VerifyHTTPSClient.
func (c *Config) IncomingHTTPS() (*tls.Config, error) {
	cert, err := c.keyPair()
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{
		MinVersion:   c.minVersion(),
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.VerifyClientCertIfGiven,
		NextProtos:   []string{"h2", "http/1.1"},
	}
	if c.CAFile != "" {
		if cfg.ClientCAs, err = c.caPool(); err != nil {
			return nil, err
		}
	}
	if c.VerifyHTTPSClient {
		if cfg.ClientCAs == nil {
			return nil, ErrNoCA
		}
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

func verifyChain(cs tls.ConnectionState, roots *x509.CertPool) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("tls: server presented no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{
		Roots:         roots,
		Intermediates: inter,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	return err
}

// IsServer reports whether the verified peer of cs holds a server
// certificate of region. Only meaningful after a handshake that verified
// the chain (IncomingRPC does).
func IsServer(cs tls.ConnectionState, region string) bool {
	if len(cs.VerifiedChains) == 0 || len(cs.PeerCertificates) == 0 {
		return false
	}
	return slices.Contains(cs.PeerCertificates[0].DNSNames, ServerName(region))
}
