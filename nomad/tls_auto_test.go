package nomad

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/helper/pool"
	"github.com/nomad-edge/nomad/helper/tlsutil"
	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// autoHandshake runs one TLS handshake against s's tls.auto listener
// configuration, the caller presenting certPEM/keyPEM when given and
// pinning the servers by the cluster CA; it returns what the server
// learnt, or the server's error.
func autoHandshake(t *testing.T, s *Server, now func() time.Time, certPEM, keyPEM []byte) (autoPeer, error) {
	t.Helper()
	ca, err := s.State().ActiveTLSCA(nil)
	must.NoError(t, err)
	roots := x509.NewCertPool()
	must.True(t, roots.AppendCertsFromPEM(ca.CertPEM))
	cfg := &tls.Config{RootCAs: roots, ServerName: tlsutil.ServerName(s.config.Region), Time: now}
	if certPEM != nil {
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		must.NoError(t, err)
		cfg.Certificates = []tls.Certificate{pair}
	}
	var peer autoPeer
	srvConn, cliConn := net.Pipe()
	defer srvConn.Close()
	defer cliConn.Close()
	done := make(chan error, 1)
	go func() {
		done <- tls.Server(srvConn, s.autoIncomingTLS(func(p autoPeer) { peer = p })).Handshake()
		srvConn.Close()
	}()
	cliErr := tls.Client(cliConn, cfg).Handshake()
	cliConn.Close()
	srvErr := <-done
	if srvErr != nil {
		return autoPeer{}, srvErr
	}
	must.NoError(t, cliErr)
	return peer, nil
}

// TestAutoTLS_Handshake checks the listener side of tls.auto: the server
// presents a certificate of the cluster CA for server.<region>.nomad (so
// a node pinning the CA can trust it), lets a caller without a
// certificate through as anonymous (it may only register and get a
// certificate), recognises a node by its certificate, and refuses at the
// handshake a purged node's certificate (revocation) and one that expired
// while its node had no disconnect window open.
func TestAutoTLS_Handshake(t *testing.T) {
	clk := newManualClock()
	s := testServer(t, func(c *Config) {
		autoTLS(c)
		c.TLS.AutoCertTTL = time.Hour
		c.Clock = clk
		c.NumSchedulers = 0
	})
	peer, err := autoHandshake(t, s, clk.Now, nil, nil)
	must.NoError(t, err)
	must.Eq(t, autoPeer{}, peer)

	token := introToken(t, s, &structs.ClientIntroductionTokenRequest{TTL: 10 * time.Minute})
	certFor := func(node *structs.Node) (certPEM, keyPEM []byte) { return registeredNodeCert(t, s, node, token) }
	kept, purged := mock.Node(), mock.Node()
	keptCert, keptKey := certFor(kept)
	purgedCert, purgedKey := certFor(purged)
	peer, err = autoHandshake(t, s, clk.Now, keptCert, keptKey)
	must.NoError(t, err)
	must.Eq(t, autoPeer{nodeID: kept.ID}, peer)

	must.NoError(t, s.RPC("Node.Purge", &structs.NodePurgeRequest{NodeID: purged.ID}, &structs.NodePurgeResponse{}))
	_, err = autoHandshake(t, s, clk.Now, purgedCert, purgedKey)
	must.ErrorContains(t, err, "not known to the servers")

	// Past its life, with no window open (the node has no allocations).
	clk.Advance(2 * time.Hour)
	_, err = autoHandshake(t, s, clk.Now, keptCert, keptKey)
	must.ErrorContains(t, err, "no disconnect window open")
}

// registeredNodeCert registers node with the introduction token and
// returns the certificate Node.IssueCert gives it, and its key.
func registeredNodeCert(t *testing.T, s *Server, node *structs.Node, token string) (certPEM, keyPEM []byte) {
	t.Helper()
	must.NoError(t, registerWith(s, node, token))
	csr, keyPEM, err := tlsutil.NewCSR("x")
	must.NoError(t, err)
	var resp structs.NodeCertResponse
	must.NoError(t, s.RPC("Node.IssueCert", &structs.NodeCertRequest{NodeID: node.ID, CSR: csr, IntroToken: token,
		WriteRequest: structs.WriteRequest{AuthToken: node.SecretID}}, &resp))
	return resp.CertPEM, keyPEM
}

// autoPool dials s's RPC port: in plaintext when roots is nil, else inside
// TLS pinning roots and presenting certPEM/keyPEM when given.
func autoPool(t *testing.T, s *Server, now func() time.Time, roots []byte, certPEM, keyPEM []byte) *pool.ConnPool {
	t.Helper()
	cfg := pool.Config{DialTimeout: 5 * time.Second, CallTimeout: 5 * time.Second}
	if roots != nil {
		rp := x509.NewCertPool()
		must.True(t, rp.AppendCertsFromPEM(roots))
		cfg.TLS = &tls.Config{RootCAs: rp, ServerName: tlsutil.ServerName(s.config.Region), Time: now}
		if certPEM != nil {
			pair, err := tls.X509KeyPair(certPEM, keyPEM)
			must.NoError(t, err)
			cfg.TLS.Certificates = []tls.Certificate{pair}
		}
	}
	p := pool.NewPool(cfg)
	t.Cleanup(p.Shutdown)
	return p
}

// TestAutoTLS_RPCRequiresNodeCert checks tls.auto on the RPC port: a
// plaintext caller is refused; a caller without a certificate may only
// register a new node and get its certificate; with it the node may call
// for itself but not name another node; a registered node cannot be
// re-registered without its certificate; and once the node is purged its
// certificate no longer opens a connection. This is what keeps an
// outsider who reaches the port from posing as, or adding, a node.
func TestAutoTLS_RPCRequiresNodeCert(t *testing.T) {
	clk := newManualClock()
	s := testServer(t, func(c *Config) {
		autoTLS(c)
		c.Clock = clk
		c.NumSchedulers = 0
	})
	addr := s.RPCAddr().String()
	ca, err := s.State().ActiveTLSCA(nil)
	must.NoError(t, err)
	ping := func(p *pool.ConnPool) error {
		return p.RPC(addr, "Status.Ping", &structs.GenericRequest{}, &struct{}{}, 0)
	}
	must.Error(t, ping(autoPool(t, s, clk.Now, nil, nil, nil)))

	anon := autoPool(t, s, clk.Now, ca.CertPEM, nil, nil)
	must.NoError(t, ping(anon))
	node := mock.Node()
	heartbeat := func(p *pool.ConnPool, id string) error {
		return p.RPC(addr, "Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: id, Status: structs.NodeStatusReady,
			WriteRequest: structs.WriteRequest{AuthToken: node.SecretID}}, &structs.NodeUpdateResponse{}, 0)
	}
	must.ErrorIs(t, heartbeat(anon, node.ID), structs.ErrNodeCertRefused)

	token := introToken(t, s, &structs.ClientIntroductionTokenRequest{})
	must.NoError(t, anon.RPC(addr, "Node.Register", &structs.NodeRegisterRequest{Node: node,
		WriteRequest: structs.WriteRequest{AuthToken: token}}, &structs.NodeUpdateResponse{}, 0))
	err = anon.RPC(addr, "Node.Register", &structs.NodeRegisterRequest{Node: node,
		WriteRequest: structs.WriteRequest{AuthToken: token}}, &structs.NodeUpdateResponse{}, 0)
	must.ErrorContains(t, err, "is registered already: it must present its certificate")
	csr, keyPEM, err := tlsutil.NewCSR("x")
	must.NoError(t, err)
	var cert structs.NodeCertResponse
	must.NoError(t, anon.RPC(addr, "Node.IssueCert", &structs.NodeCertRequest{NodeID: node.ID, CSR: csr, IntroToken: token,
		WriteRequest: structs.WriteRequest{AuthToken: node.SecretID}}, &cert, 0))

	own := autoPool(t, s, clk.Now, ca.CertPEM, cert.CertPEM, keyPEM)
	must.NoError(t, heartbeat(own, node.ID))
	must.ErrorContains(t, heartbeat(own, "other-node"), "the call names node other-node")

	must.NoError(t, s.RPC("Node.Purge", &structs.NodePurgeRequest{NodeID: node.ID}, &structs.NodePurgeResponse{}))
	must.Error(t, ping(autoPool(t, s, clk.Now, ca.CertPEM, cert.CertPEM, keyPEM)))
}

// TestAutoTLS_RotationKeepsOldNodesVerifying checks that after a CA
// rotation the servers are still verified by a node that trusts only the
// CA they rotated away from (it learns the new one when it next renews):
// their chain carries the new CA cross-signed by the old one while the old
// one is trusted, and a node that trusts the new one verifies as well.
// Without it, `nomad operator tls ca rotate` cut every node off at its
// next connection, until re-introduced.
func TestAutoTLS_RotationKeepsOldNodesVerifying(t *testing.T) {
	clk := newManualClock()
	s := testServer(t, func(c *Config) {
		autoTLS(c)
		c.TLS.AutoCertTTL = time.Hour
		c.Clock = clk
		c.NumSchedulers = 0
	})
	addr := s.RPCAddr().String()
	ping := func(p *pool.ConnPool) error {
		return p.RPC(addr, "Status.Ping", &structs.GenericRequest{}, &struct{}{}, 0)
	}
	old, err := s.State().ActiveTLSCA(nil)
	must.NoError(t, err)
	must.NoError(t, ping(autoPool(t, s, clk.Now, old.CertPEM, nil, nil)))

	rotated, _, err := s.rotateTLSCA()
	must.NoError(t, err)
	must.NotEq(t, old.ID, rotated.ID)
	must.SliceNotEmpty(t, rotated.CrossPEM)
	must.NoError(t, ping(autoPool(t, s, clk.Now, old.CertPEM, nil, nil)), must.Sprint("a node that trusts only the old CA"))
	must.NoError(t, ping(autoPool(t, s, clk.Now, rotated.CertPEM, nil, nil)), must.Sprint("a node that trusts the new CA"))

	// Once the old CA is no longer trusted its cross-signature goes too.
	clk.Advance(2 * time.Hour)
	err = ping(autoPool(t, s, clk.Now, old.CertPEM, nil, nil))
	must.Error(t, err)
	must.NoError(t, ping(autoPool(t, s, clk.Now, rotated.CertPEM, nil, nil)))
}

// TestAutoTLS_NodeStreamsRequireTheirCert checks tls.auto on what is no
// single call: a node's session (the servers reach its API through it),
// its liveness stream and an HTTP exchange with a node's API. A caller
// without a certificate opens none of them even with the node's secret,
// a node's certificate opens them only for that node, and an upstream
// client session is refused (it would pass no per-call gate; not probed
// here, it needs upstream's framing). Without this, whoever held a node's secret could take over its session and the
// liveness the servers judge it by.
func TestAutoTLS_NodeStreamsRequireTheirCert(t *testing.T) {
	clk := newManualClock()
	s := testServer(t, func(c *Config) {
		autoTLS(c)
		c.Clock = clk
		c.NumSchedulers = 0
	})
	addr := s.RPCAddr().String()
	ca, err := s.State().ActiveTLSCA(nil)
	must.NoError(t, err)
	token := introToken(t, s, &structs.ClientIntroductionTokenRequest{})
	node, other := mock.Node(), mock.Node()
	certs := map[string][2][]byte{}
	for _, n := range []*structs.Node{node, other} {
		certPEM, keyPEM := registeredNodeCert(t, s, n, token)
		certs[n.ID] = [2][]byte{certPEM, keyPEM}
	}
	tlsFor := func(id string) *tls.Config {
		rp := x509.NewCertPool()
		must.True(t, rp.AppendCertsFromPEM(ca.CertPEM))
		cfg := &tls.Config{RootCAs: rp, ServerName: tlsutil.ServerName(s.config.Region), Time: clk.Now}
		if id != "" {
			pair, err := tls.X509KeyPair(certs[id][0], certs[id][1])
			must.NoError(t, err)
			cfg.Certificates = []tls.Certificate{pair}
		}
		return cfg
	}
	session := func(certOf string) error {
		conn, err := pool.Dial(t.Context(), pool.DialInput{Addr: addr, TLS: tlsFor(certOf), Kind: pool.RPCNodeSession})
		must.NoError(t, err)
		defer conn.Close()
		return pool.NodeHello(conn, structs.NodeSessionHello{NodeID: node.ID, SecretID: node.SecretID})
	}
	err = session("")
	must.ErrorIs(t, err, pool.ErrSessionRefused)
	must.StrContains(t, err.Error(), "a node session needs a node certificate")
	must.StrContains(t, session(other.ID).Error(), "the certificate is node "+other.ID+"'s, the node session names node "+node.ID)
	must.NoError(t, session(node.ID))

	keepalive := func(certOf string) error {
		p := autoPool(t, s, clk.Now, ca.CertPEM, nil, nil)
		if certOf != "" {
			p = autoPool(t, s, clk.Now, ca.CertPEM, certs[certOf][0], certs[certOf][1])
		}
		st, err := p.OpenStream(t.Context(), addr, pool.RPCNodeKeepalive)
		must.NoError(t, err)
		defer st.Close()
		return pool.NodeHello(st, structs.NodeSessionHello{NodeID: node.ID, SecretID: node.SecretID})
	}
	must.StrContains(t, keepalive("").Error(), "a liveness session needs a node certificate")
	must.StrContains(t, keepalive(other.ID).Error(), "the liveness session names node "+node.ID)
	must.NoError(t, keepalive(node.ID))

	// An anonymous HTTP exchange with a node's API is closed unanswered.
	for _, kind := range []byte{pool.RPCClientHTTP} {
		conn, err := pool.Dial(t.Context(), pool.DialInput{Addr: addr, TLS: tlsFor(""), Kind: kind})
		must.NoError(t, err)
		_, _ = conn.Write([]byte("GET /v1/client/stats HTTP/1.1\r\nHost: x\r\n\r\n"))
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, err := conn.Read(make([]byte, 64))
		must.Eq(t, 0, n, must.Sprint("an anonymous caller gets no answer from a node's API"))
		must.Error(t, err)
		conn.Close()
	}
}
