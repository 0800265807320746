package agent

import (
	"crypto/tls"
	"fmt"
	"net"
	"path/filepath"

	"github.com/nomad-edge/nomad/client"
)

// loadAutoTLS reads a client-only agent's credentials of tls.auto, kept
// under the client's state dir (client.AutoTLS); nothing without tls.auto.
func (a *Agent) loadAutoTLS() error {
	cfg := a.config
	if cfg.TLSConfig == nil || !cfg.TLSConfig.Auto || !cfg.Client.Enabled {
		return nil
	}
	creds, err := client.LoadAutoTLS(client.AutoTLSConfig{
		StateDir:   filepath.Join(a.dataDir, "client"),
		Region:     cfg.Region,
		IntroToken: clientIntroToken(cfg.Client.IntroToken),
		Logger:     a.logger.Named("client.autotls"),
	})
	if err != nil {
		return err
	}
	a.autoTLS = creds
	return nil
}

// outgoingRPCTLS is what a client-only agent dials its servers with: the
// node's credentials under tls.auto, tls.rpc's files, or nil.
func (a *Agent) outgoingRPCTLS() (*tls.Config, error) {
	if a.autoTLS != nil {
		return a.autoTLS.ClientTLS(), nil
	}
	if a.config.TLSConfig == nil || !a.config.TLSConfig.EnableRPC {
		return nil, nil
	}
	cfg, err := a.config.tlsutilConfig().OutgoingRPC()
	if err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	return cfg, nil
}

// httpsListener wraps the API's listener in TLS when tls.http is on.
// net/http negotiates HTTP/2 over it, as over ListenAndServeTLS.
func (a *Agent) httpsListener(l net.Listener) (net.Listener, error) {
	if a.config.TLSConfig == nil || !a.config.TLSConfig.EnableHTTP {
		return l, nil
	}
	cfg, err := a.config.tlsutilConfig().IncomingHTTPS()
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("tls: %w", err)
	}
	return newTLSHandshakeListener(l, cfg, a.config.connLimits().HTTPSHandshakeTimeout), nil
}

// HTTPScheme is "https" when the API is served over TLS, else "http".
func (a *Agent) HTTPScheme() string {
	if a.config.TLSConfig != nil && a.config.TLSConfig.EnableHTTP {
		return "https"
	}
	return "http"
}
