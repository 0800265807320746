package agent

import (
	"crypto/tls"
	"fmt"
	"net"
)

// outgoingRPCTLS is what a client-only agent dials its servers with: nil
// without tls.rpc.
func (a *Agent) outgoingRPCTLS() (*tls.Config, error) {
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
