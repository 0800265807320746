package api

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
)

// Environment variables of the TLS settings, upstream's names.
const (
	EnvCACert        = "NOMAD_CACERT"
	EnvCAPath        = "NOMAD_CAPATH"
	EnvClientCert    = "NOMAD_CLIENT_CERT"
	EnvClientKey     = "NOMAD_CLIENT_KEY"
	EnvTLSServerName = "NOMAD_TLS_SERVER_NAME"
	EnvSkipVerify    = "NOMAD_SKIP_VERIFY"
)

// TLSConfig says how to reach an agent that serves HTTPS (tls.http). Its
// field names are upstream's, so code written for the official client
// fills it the same way.
type TLSConfig struct {
	// CACert is a PEM file of CAs to trust instead of the system's;
	// CAPath a directory of them; CACertPEM the PEM itself.
	CACert    string
	CAPath    string
	CACertPEM []byte

	// ClientCert and ClientKey are the PEM files of the certificate to
	// present (required by agents with verify_https_client); the *PEM
	// fields hold the PEM itself.
	ClientCert    string
	ClientCertPEM []byte
	ClientKey     string
	ClientKeyPEM  []byte

	// TLSServerName is the name to verify the agent's certificate
	// against, when it is not the host of the address.
	TLSServerName string

	// Insecure skips verifying the agent's certificate altogether.
	Insecure bool
}

// tlsConfigFromEnv reads the NOMAD_* TLS variables.
func tlsConfigFromEnv() *TLSConfig {
	t := &TLSConfig{
		CACert:        os.Getenv(EnvCACert),
		CAPath:        os.Getenv(EnvCAPath),
		ClientCert:    os.Getenv(EnvClientCert),
		ClientKey:     os.Getenv(EnvClientKey),
		TLSServerName: os.Getenv(EnvTLSServerName),
	}
	if v := os.Getenv(EnvSkipVerify); v != "" {
		t.Insecure, _ = strconv.ParseBool(v)
	}
	return t
}

// empty reports a TLSConfig that changes nothing.
func (t *TLSConfig) empty() bool {
	return t == nil || (t.CACert == "" && t.CAPath == "" && len(t.CACertPEM) == 0 &&
		t.ClientCert == "" && len(t.ClientCertPEM) == 0 && t.ClientKey == "" && len(t.ClientKeyPEM) == 0 &&
		t.TLSServerName == "" && !t.Insecure)
}

// clientConfig builds the crypto/tls configuration; errors name the
// setting that is wrong.
func (t *TLSConfig) clientConfig() (*tls.Config, error) {
	cfg := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         t.TLSServerName,
		InsecureSkipVerify: t.Insecure,
	}
	roots, err := t.roots()
	if err != nil {
		return nil, err
	}
	cfg.RootCAs = roots
	certPEM, keyPEM := t.ClientCertPEM, t.ClientKeyPEM
	if t.ClientCert != "" {
		if certPEM, err = os.ReadFile(t.ClientCert); err != nil {
			return nil, fmt.Errorf("reading client certificate: %w", err)
		}
	}
	if t.ClientKey != "" {
		if keyPEM, err = os.ReadFile(t.ClientKey); err != nil {
			return nil, fmt.Errorf("reading client key: %w", err)
		}
	}
	switch {
	case len(certPEM) > 0 && len(keyPEM) > 0:
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("loading client certificate and key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	case len(certPEM) > 0 || len(keyPEM) > 0:
		return nil, errors.New("a client certificate needs its key, and a key its certificate")
	}
	return cfg, nil
}

// roots returns the CAs to trust, or nil for the system's.
func (t *TLSConfig) roots() (*x509.CertPool, error) {
	var pems [][]byte
	if len(t.CACertPEM) > 0 {
		pems = append(pems, t.CACertPEM)
	}
	if t.CACert != "" {
		b, err := os.ReadFile(t.CACert)
		if err != nil {
			return nil, fmt.Errorf("reading CA certificate: %w", err)
		}
		pems = append(pems, b)
	}
	if t.CAPath != "" {
		files, err := filepath.Glob(filepath.Join(t.CAPath, "*"))
		if err != nil {
			return nil, fmt.Errorf("reading CA path: %w", err)
		}
		for _, f := range files {
			if fi, err := os.Stat(f); err != nil || fi.IsDir() {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, fmt.Errorf("reading CA path: %w", err)
			}
			pems = append(pems, b)
		}
	}
	if len(pems) == 0 {
		return nil, nil
	}
	pool := x509.NewCertPool()
	for _, p := range pems {
		if !pool.AppendCertsFromPEM(p) {
			return nil, errors.New("CA certificate: no PEM certificate found")
		}
	}
	return pool, nil
}

// configureTLS applies t to hc's transport, which must be an
// *http.Transport (the default one is).
func configureTLS(hc *http.Client, t *TLSConfig) error {
	if t.empty() {
		return nil
	}
	tr, ok := hc.Transport.(*http.Transport)
	if !ok {
		return errors.New("TLSConfig needs the HTTP client's Transport to be an *http.Transport")
	}
	cfg, err := t.clientConfig()
	if err != nil {
		return err
	}
	tr.TLSClientConfig = cfg
	return nil
}
