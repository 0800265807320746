package agent

import (
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/nomad-edge/nomad/helper/tlsutil"
)

// tlsMinVersions are the tls_min_version values this version accepts:
// upstream's names, without the ones below TLS 1.2.
var tlsMinVersions = map[string]uint16{"": tls.VersionTLS12, "tls12": tls.VersionTLS12, "tls13": tls.VersionTLS13}

// ErrTLSAutoNotEnforced refuses tls.auto while this version has its
// parts but not the whole: the cluster CA (nomad operator tls ca),
// Node.IssueCert, the servers' RPC port requiring node certificates for
// calls and node streams alike, and the client's side (client.AutoTLS)
// exist, but servers do not yet dial each other with theirs (raft is not
// under it), so accepting the key would promise what it does not do. The
// refusal goes when that is built.
var ErrTLSAutoNotEnforced = errors.New("tls.auto is not available in this version yet: servers and clients have their certificates, but raft between servers is not yet under it; use tls { rpc = true ... } with certificates from `nomad tls ca create` and `nomad tls cert create`")

// tlsutilConfig is the tls block in the form the TLS helpers take; never
// nil, disabled when there is no block.
func (c *Config) tlsutilConfig() *tlsutil.Config {
	t := c.TLSConfig
	if t == nil {
		return &tlsutil.Config{Region: c.Region}
	}
	return &tlsutil.Config{
		EnableHTTP:           t.EnableHTTP,
		EnableRPC:            t.EnableRPC,
		CAFile:               t.CAFile,
		CertFile:             t.CertFile,
		KeyFile:              t.KeyFile,
		VerifyServerHostname: t.VerifyServerHostname,
		VerifyHTTPSClient:    t.VerifyHTTPSClient,
		MinVersion:           tlsMinVersions[t.TLSMinVersion],
		Region:               c.Region,
		Auto:                 t.Auto,
		AutoCertTTL:          t.AutoCertTTL,
	}
}

// encryptKey decodes server.encrypt: base64 of 16, 24 or 32 bytes, as
// `nomad operator gossip keyring generate` prints.
func (s *ServerConfig) encryptKey() ([]byte, error) {
	if s.EncryptKey == "" {
		return nil, nil
	}
	key, err := base64.StdEncoding.DecodeString(s.EncryptKey)
	if err != nil {
		return nil, fmt.Errorf("server.encrypt must be base64 (make one with `nomad operator gossip keyring generate`): %w", err)
	}
	switch len(key) {
	case 16, 24, 32:
		return key, nil
	}
	return nil, fmt.Errorf("server.encrypt must decode to 16, 24 or 32 bytes, not %d", len(key))
}
