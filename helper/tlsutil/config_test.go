package tlsutil_test

import (
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/helper/tlsutil"
	"github.com/nomad-edge/nomad/helper/tlsutil/tlstest"
)

// handshake runs a TLS handshake between the two configs over a pipe and
// returns what the server side saw and both sides' errors.
func handshake(t *testing.T, srv, cli *tls.Config) (tls.ConnectionState, error, error) {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	_ = a.SetDeadline(time.Now().Add(5 * time.Second))
	_ = b.SetDeadline(time.Now().Add(5 * time.Second))
	s, c := tls.Server(a, srv), tls.Client(b, cli)
	errCh := make(chan error, 1)
	go func() {
		err := c.Handshake()
		if err == nil {
			// Read on, so the server can send its alert if it refuses us
			// after our side of the handshake is done (TLS 1.3).
			_, _ = c.Read(make([]byte, 1))
		}
		b.Close()
		errCh <- err
	}()
	serr := s.Handshake()
	a.Close()
	cerr := <-errCh
	return s.ConnectionState(), serr, cerr
}

func rpcPair(t *testing.T, srv, cli tlstest.Pair) (*tls.Config, *tls.Config) {
	t.Helper()
	in, err := srv.Config("global").IncomingRPC()
	must.NoError(t, err)
	out, err := cli.Config("global").OutgoingRPC()
	must.NoError(t, err)
	return in, out
}

// A server knows a server peer from a client peer by its certificate:
// that is what keeps scheduling RPCs to servers.
func TestIsServer_ByCertificateName(t *testing.T) {
	ca := tlstest.NewCA(t)
	server := ca.Issue(t, tlsutil.RoleServer, "global", tlstest.Options{})
	client := ca.Issue(t, tlsutil.RoleClient, "global", tlstest.Options{})

	in, out := rpcPair(t, server, server)
	cs, serr, cerr := handshake(t, in, out)
	must.NoError(t, serr)
	must.NoError(t, cerr)
	must.True(t, tlsutil.IsServer(cs, "global"))
	must.False(t, tlsutil.IsServer(cs, "europe"))

	in, _ = rpcPair(t, server, client)
	clientOut, err := client.Config("global").OutgoingRPC()
	must.NoError(t, err)
	cs, serr, cerr = handshake(t, in, clientOut)
	must.NoError(t, serr)
	must.NoError(t, cerr)
	must.False(t, tlsutil.IsServer(cs, "global"))
}

// With verify_server_hostname a client certificate cannot pose as a
// server to the agents that dial it.
func TestOutgoingRPC_VerifyServerHostname(t *testing.T) {
	ca := tlstest.NewCA(t)
	client := ca.Issue(t, tlsutil.RoleClient, "global", tlstest.Options{})
	impostor, err := client.Config("global").IncomingRPC()
	must.NoError(t, err)
	out, err := client.Config("global").OutgoingRPC()
	must.NoError(t, err)
	_, _, cerr := handshake(t, impostor, out)
	must.ErrorContains(t, cerr, "server.global.nomad")

	// Without it, any certificate of the CA is a good enough server.
	lax := client.Config("global")
	lax.VerifyServerHostname = false
	out, err = lax.OutgoingRPC()
	must.NoError(t, err)
	_, serr, cerr := handshake(t, impostor, out)
	must.NoError(t, serr)
	must.NoError(t, cerr)
}

// Certificates of another CA, expired ones and none at all are refused
// in both directions.
func TestRPC_RefusesUntrustedPeers(t *testing.T) {
	ca, other := tlstest.NewCA(t), tlstest.NewCA(t)
	server := ca.Issue(t, tlsutil.RoleServer, "global", tlstest.Options{})
	foreign := other.Issue(t, tlsutil.RoleServer, "global", tlstest.Options{})
	expired := ca.Issue(t, tlsutil.RoleServer, "global", tlstest.Options{
		NotBefore: time.Now().Add(-2 * time.Hour), Validity: time.Hour,
	})
	in, err := server.Config("global").IncomingRPC()
	must.NoError(t, err)

	for name, p := range map[string]tlstest.Pair{"other CA": foreign, "expired": expired} {
		t.Run(name, func(t *testing.T) {
			// The peer trusts our CA, so only its own certificate is wrong.
			cfg := p.Config("global")
			cfg.CAFile = ca.CAFile
			out, err := cfg.OutgoingRPC()
			must.NoError(t, err)
			_, serr, _ := handshake(t, in, out)
			must.Error(t, serr)
		})
	}
	t.Run("no certificate", func(t *testing.T) {
		out, err := server.Config("global").OutgoingRPC()
		must.NoError(t, err)
		out.Certificates = nil
		_, serr, _ := handshake(t, in, out)
		must.ErrorContains(t, serr, "certificate")
	})
	t.Run("server of another CA", func(t *testing.T) {
		fin, err := foreign.Config("global").IncomingRPC()
		must.NoError(t, err)
		out, err := server.Config("global").OutgoingRPC()
		must.NoError(t, err)
		_, _, cerr := handshake(t, fin, out)
		must.ErrorContains(t, cerr, "unknown authority")
	})
}

// verify_https_client makes a client certificate mandatory on HTTPS;
// without it the API serves anyone over TLS.
func TestIncomingHTTPS_VerifyClient(t *testing.T) {
	ca := tlstest.NewCA(t)
	server := ca.Issue(t, tlsutil.RoleServer, "global", tlstest.Options{})
	cfg := server.Config("global")
	in, err := cfg.IncomingHTTPS()
	must.NoError(t, err)
	anon, err := server.Config("global").OutgoingRPC()
	must.NoError(t, err)
	anon.Certificates = nil
	_, serr, _ := handshake(t, in, anon)
	must.NoError(t, serr)

	cfg.VerifyHTTPSClient = true
	in, err = cfg.IncomingHTTPS()
	must.NoError(t, err)
	_, serr, _ = handshake(t, in, anon)
	must.Error(t, serr)
}

// A tls block with a missing or unreadable file names the key.
func TestCheck_NamesTheKey(t *testing.T) {
	ca := tlstest.NewCA(t)
	p := ca.Issue(t, tlsutil.RoleServer, "global", tlstest.Options{})
	must.NoError(t, p.Config("global").Check())

	c := p.Config("global")
	c.CAFile = ""
	must.ErrorContains(t, c.Check(), "tls.ca_file is required")

	c = p.Config("global")
	c.KeyFile = ca.CAFile
	must.ErrorContains(t, c.Check(), "tls.key_file")

	c = p.Config("global")
	c.CAFile = p.KeyFile
	must.ErrorContains(t, c.Check(), "tls.ca_file")

	must.NoError(t, (&tlsutil.Config{}).Check())
}

// A certificate signed with the wrong CA key is refused at creation.
func TestGenerateCert_CAKeyMustMatch(t *testing.T) {
	ca1, _, err := tlsutil.GenerateCA(tlsutil.CAInput{})
	must.NoError(t, err)
	_, key2, err := tlsutil.GenerateCA(tlsutil.CAInput{})
	must.NoError(t, err)
	in, err := tlsutil.RoleCert(tlsutil.RoleServer, "global")
	must.NoError(t, err)
	in.CA, in.CAKey = ca1, key2
	_, _, err = tlsutil.GenerateCert(in)
	must.ErrorContains(t, err, "does not belong")

	_, err = tlsutil.RoleCert("admin", "global")
	must.ErrorContains(t, err, `unknown certificate role "admin"`)
}
