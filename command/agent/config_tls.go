package agent

import (
	"crypto/tls"
	"encoding/base64"
	"fmt"

	"github.com/nomad-edge/nomad/helper/tlsutil"
	"github.com/nomad-edge/nomad/nomad"
)

// tlsMinVersions are the tls_min_version values this version accepts:
// upstream's names, without the ones below TLS 1.2.
var tlsMinVersions = map[string]uint16{"": tls.VersionTLS12, "tls12": tls.VersionTLS12, "tls13": tls.VersionTLS13}

// checkTLSAuto refuses the agents of tls.auto that cannot work: a
// server without the gossip key (server.encrypt), which is how servers
// recognise each other before they hold certificates (a -dev server,
// alone, needs none).
func (c *Config) checkTLSAuto() error {
	if c.TLSConfig == nil || !c.TLSConfig.Auto || !c.Server.Enabled || c.DevMode || c.Server.EncryptKey != "" {
		return nil
	}
	return nomad.ErrTLSAutoNeedsEncrypt
}

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
