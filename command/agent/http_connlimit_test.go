package agent

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/helper/tlsutil"
	"github.com/nomad-edge/nomad/helper/tlsutil/tlstest"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// serveOK serves 200s on l until the test ends.
func serveOK(t *testing.T, l net.Listener) {
	t.Helper()
	srv := &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") }),
		ReadHeaderTimeout: time.Minute,
	}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
}

func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	must.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// httpClientFrom is a client whose connections come from src; tlsCfg,
// when set, makes it speak HTTPS.
func httpClientFrom(src string, tlsCfg *tls.Config) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, TLSClientConfig: tlsCfg, DisableKeepAlives: true}}
}

// TestHTTPListener_MaxConnsPerClient checks http_max_conns_per_client: an
// IP at its limit is told 429 and closed, other IPs are served, and a
// closed connection gives its slot back.
func TestHTTPListener_MaxConnsPerClient(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	must.NoError(t, err)
	serveOK(t, limitHTTPListener(raw, httpLimitsInput{MaxPerClient: 2, Plaintext: true}))
	addr := raw.Addr().String()

	held := []net.Conn{dialFrom(t, "127.0.0.9", addr), dialFrom(t, "127.0.0.9", addr)}
	over := dialFrom(t, "127.0.0.9", addr)
	_ = over.SetReadDeadline(time.Now().Add(5 * time.Second))
	answer, err := io.ReadAll(over)
	must.NoError(t, err)
	must.StrHasPrefix(t, "HTTP/1.1 429 Too Many Requests", string(answer))
	must.StrContains(t, string(answer), "limits.http_max_conns_per_client")

	resp, err := httpClientFrom("127.0.0.2", nil).Get("http://" + addr + "/")
	must.NoError(t, err, must.Sprint("another IP has its own budget"))
	resp.Body.Close()
	must.Eq(t, http.StatusOK, resp.StatusCode)

	held[0].Close()
	// The server sees the close asynchronously.
	wait.Poll(t, 5*time.Second, "a closed connection's slot given back", func() (bool, string) {
		resp, err := httpClientFrom("127.0.0.9", nil).Get("http://" + addr + "/")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
}

// TestHTTPSHandshakeTimeout checks https_handshake_timeout: a connection
// that never starts its TLS handshake is closed after the timeout, and
// while it waits other clients are served, so half-open connections
// cannot stall the API.
func TestHTTPSHandshakeTimeout(t *testing.T) {
	ca := tlstest.NewCA(t)
	pair := ca.Issue(t, tlsutil.RoleServer, "global", tlstest.Options{})
	srvCfg, err := pair.Config("global").IncomingHTTPS()
	must.NoError(t, err)
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	must.NoError(t, err)
	serveOK(t, newTLSHandshakeListener(raw, srvCfg, 300*time.Millisecond))
	addr := raw.Addr().String()

	silent := dialFrom(t, "127.0.0.9", addr)
	start := time.Now()

	pem, err := os.ReadFile(ca.CAFile)
	must.NoError(t, err)
	roots := x509.NewCertPool()
	must.True(t, roots.AppendCertsFromPEM(pem))
	resp, err := httpClientFrom("127.0.0.1", &tls.Config{RootCAs: roots, ServerName: "localhost"}).Get("https://" + addr + "/")
	must.NoError(t, err)
	resp.Body.Close()
	must.Eq(t, http.StatusOK, resp.StatusCode)

	_ = silent.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = io.Copy(io.Discard, silent)
	must.False(t, errors.Is(err, os.ErrDeadlineExceeded), must.Sprint("the silent connection was never closed"))
	must.Greater(t, 250*time.Millisecond, time.Since(start), must.Sprint("closed before its handshake timeout"))
}

// TestHTTPListener_ZeroDisables checks 0 turns the limit off.
func TestHTTPListener_ZeroDisables(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	must.NoError(t, err)
	defer raw.Close()
	must.Eq(t, raw, limitHTTPListener(raw, httpLimitsInput{MaxPerClient: 0}))
}
