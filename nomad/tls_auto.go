package nomad

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nomad-edge/nomad/helper/tlsutil"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// The RPC listener's side of tls.auto, as a TLS configuration: the
// server presents a certificate of the cluster CA that it issues to
// itself (every server holds the CA key through the keyring), asks each
// caller for a certificate and checks one when given: a server's against
// the trusted CAs, a node's also against the state store, so that a
// purged node is refused at the handshake (revocation) and an expired
// certificate passes only inside the node's disconnect window. A caller
// without a certificate gets through the handshake: what it may then
// call (registration and Node.IssueCert) is autoGate's decision, made
// for each call of the connection (openConn, serveStream).

// autoCert is the server's own certificate of tls.auto and what it
// trusts while its state store holds no CA (see tls_server.go).
type autoCert struct {
	mu sync.Mutex
	// cert, keyPEM, caID, crossed (the chain carries the cross-signed
	// CA), roots and plain are guarded by mu.
	cert    *tls.Certificate
	keyPEM  []byte
	caID    string
	crossed bool
	// roots are the CAs trusted as of the last certificate (PEM), for a
	// server whose state store has none yet: restarted, or given its
	// certificate by a peer (ServerTLS.IssueCert) before its log did.
	roots [][]byte
	// plain are the plaintext connections accepted from servers proven
	// by the bootstrap key before this server knew a CA; closed when it
	// learns one.
	plain map[net.Conn]struct{}

	// dir is where the certificate is kept ("" for dev servers), key the
	// bootstrap key; both set at start.
	dir string
	key []byte
	// gen counts the certificates taken (pool.Credentials); kick asks
	// autoTLSLoop to fetch one now.
	gen  atomic.Uint64
	kick chan struct{}
}

// autoPeer is what the handshake learnt about a caller of tls.auto.
type autoPeer struct {
	server bool
	// nodeID is set for a node's certificate; expired when it passed only
	// because the node's disconnect window is open (renewal only).
	nodeID  string
	expired bool
}

// ownAutoCert returns the server's certificate: one it issues itself
// when it holds the active CA's key (a new one when it has none for the
// active CA or the one it has is past half its life), else the one it
// has while unexpired, a fetch from a peer asked for meanwhile.
func (s *Server) ownAutoCert() (*tls.Certificate, error) {
	c := &s.autoCert
	c.mu.Lock()
	defer c.mu.Unlock()
	now := s.clock.Now()
	cert, err := s.issueOwnCertLocked(now)
	if err == nil {
		return cert, nil
	}
	c.wake()
	if c.cert != nil && now.Before(c.cert.Leaf.NotAfter) {
		return c.cert, nil
	}
	return nil, err
}

// issueOwnCertLocked is ownAutoCert's own issue, from the state store's
// active CA.
func (s *Server) issueOwnCertLocked(now time.Time) (*tls.Certificate, error) {
	c := &s.autoCert
	active, err := s.State().ActiveTLSCA(nil)
	if err != nil {
		return nil, err
	}
	if active == nil {
		return nil, ErrNoTLSCA
	}
	cas, err := s.State().TLSCAs(nil)
	if err != nil {
		return nil, err
	}
	chain := servingChain(cas, active, now)
	if c.cert != nil && c.caID == active.ID && c.crossed == (len(chain) > len(active.CertPEM)) && !pastHalfLife(c.cert.Leaf, now) {
		return c.cert, nil
	}
	// Called at every handshake: a server without the CA's key (its
	// keyring not yet copied) must not make a key pair only to fail.
	if _, _, err := s.activeCAKey(); err != nil {
		return nil, err
	}
	in, err := tlsutil.RoleCert(tlsutil.RoleServer, s.config.Region)
	if err != nil {
		return nil, err
	}
	csr, keyPEM, err := tlsutil.NewCSR(in.CommonName)
	if err != nil {
		return nil, err
	}
	signed, err := s.signServerCSR(csr, now)
	if err != nil {
		return nil, err
	}
	if err := c.takeLocked(signed, keyPEM); err != nil {
		return nil, err
	}
	return c.cert, nil
}

// pastHalfLife reports whether leaf is due for renewal at now.
func pastHalfLife(leaf *x509.Certificate, now time.Time) bool {
	return !now.Before(leaf.NotBefore.Add(leaf.NotAfter.Sub(leaf.NotBefore) / 2))
}

// autoIncomingTLS is the RPC listener's TLS configuration under tls.auto.
// Each handshake's verdict on the caller goes to onPeer.
func (s *Server) autoIncomingTLS(onPeer func(autoPeer)) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return s.ownAutoCert()
		},
		ClientAuth: tls.RequestClientCert,
		VerifyConnection: func(cs tls.ConnectionState) error {
			p, err := s.checkAutoPeer(cs.PeerCertificates)
			if err == nil && onPeer != nil {
				onPeer(p)
			}
			return err
		},
	}
}

// errAutoCertRole refuses a certificate of the CA that is neither a
// server's nor a node's.
var errAutoCertRole = errors.New("certificate names neither a server nor a node of this region")

// checkAutoPeer decides on the certificates a caller presented: none
// (anonymous), a server's, or a node's (verifyNodeCert).
func (s *Server) checkAutoPeer(chain []*x509.Certificate) (autoPeer, error) {
	if len(chain) == 0 {
		return autoPeer{}, nil
	}
	st := s.State()
	now := s.clock.Now()
	roots, err := s.autoRoots(now)
	if err != nil {
		return autoPeer{}, err
	}
	leaf := chain[0]
	if slices.Contains(leaf.DNSNames, tlsutil.ServerName(s.config.Region)) {
		if err := verifyServerChain(chain, roots, now, x509.ExtKeyUsageClientAuth); err != nil {
			return autoPeer{}, err
		}
		return autoPeer{server: true}, nil
	}
	if !slices.Contains(leaf.DNSNames, tlsutil.ClientName(s.config.Region)) {
		return autoPeer{}, errAutoCertRole
	}
	nodeID := leaf.Subject.CommonName
	node, err := st.NodeByID(nil, nodeID)
	if err != nil {
		return autoPeer{}, err
	}
	var check = nodeCertCheck{Cert: leaf, NodeID: nodeID, Region: s.config.Region, Roots: roots, Now: now, Node: node}
	if node != nil {
		if check.Allocs, err = st.AllocsByNode(nil, nodeID); err != nil {
			return autoPeer{}, err
		}
	}
	expired, err := verifyNodeCert(check)
	if err != nil {
		return autoPeer{}, err
	}
	return autoPeer{nodeID: nodeID, expired: expired}, nil
}

// ErrNodeCertRequired refuses a call under tls.auto that the caller's
// certificate does not allow.
var ErrNodeCertRequired = fmt.Errorf("%w: tls.auto", structs.ErrNodeCertRefused)

// anonymousMethods are what a caller of tls.auto without a certificate
// may call: a new node registers (with its introduction token, as
// server.client_introduction says) and gets its first certificate, and a
// new server gets its own (proved by the bootstrap key).
var anonymousMethods = []string{"Node.Register", "Node.IssueCert", "Status.Ping", methodServerIssueCert}

// autoGate returns the check every call of a tls.auto connection from
// peer passes before its endpoint runs, or nil when there is none to
// make (not tls.auto, or a server). A node's certificate allows calls
// that name that node or none; an expired one only its renewal; no
// certificate only anonymousMethods, and registering only a node the
// servers do not know yet (a known node proves itself by its
// certificate, not by its secret alone).
func (s *Server) autoGate(peer rpcPeer) func(method string, body any) error {
	if !peer.auto || peer.isServer() {
		return nil
	}
	return func(method string, body any) error {
		named, ok := requestNodeID(body)
		switch {
		case peer.certExpired && method != "Node.IssueCert":
			return fmt.Errorf("%w: node %s's certificate has expired: only Node.IssueCert (renewal) is allowed", ErrNodeCertRequired, peer.node)
		case peer.node != "" && ok && named != peer.node:
			return fmt.Errorf("%w: the certificate is node %s's, the call names node %s", ErrNodeCertRequired, peer.node, named)
		case peer.node != "":
			return nil
		case !slices.Contains(anonymousMethods, method):
			return fmt.Errorf("%w: %s needs a node certificate (a new node registers and calls Node.IssueCert first)", ErrNodeCertRequired, method)
		case method == "Node.Register" && ok:
			node, err := s.State().NodeByID(nil, named)
			if err != nil {
				return err
			}
			if node != nil {
				return fmt.Errorf("%w: node %s is registered already: it must present its certificate", ErrNodeCertRequired, named)
			}
		}
		return nil
	}
}

// requestNodeID is the node a request names: its NodeID, or for a
// registration its node's ID.
func requestNodeID(body any) (string, bool) {
	switch r := body.(type) {
	case *structs.NodeRegisterRequest:
		if r.Node == nil {
			return "", false
		}
		return r.Node.ID, true
	case *structs.NodeCertRequest:
		return r.NodeID, true
	}
	v := reflect.ValueOf(body)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return "", false
	}
	f := v.Elem().FieldByName("NodeID")
	if !f.IsValid() || f.Kind() != reflect.String {
		return "", false
	}
	return f.String(), true
}

// autoNodeStream decides, under tls.auto, whether peer may open a
// stream that carries a node's traffic outside the per-call gate: a
// node's session (pool.RPCNodeSession), its liveness stream
// (pool.RPCNodeKeepalive) or an HTTP exchange with a node's API
// (pool.RPCClientHTTP). Servers may; a node only with its certificate,
// unexpired, and (nodeID non-empty) for itself; a caller without a
// certificate not at all. nil when tls.auto is off.
func autoNodeStream(peer rpcPeer, what, nodeID string) error {
	if !peer.auto || peer.isServer() {
		return nil
	}
	switch {
	case peer.node == "":
		return fmt.Errorf("%w: a %s needs a node certificate", ErrNodeCertRequired, what)
	case peer.certExpired:
		return fmt.Errorf("%w: node %s's certificate has expired: renew it (Node.IssueCert) before opening a %s", ErrNodeCertRequired, peer.node, what)
	case nodeID != "" && nodeID != peer.node:
		return fmt.Errorf("%w: the certificate is node %s's, the %s names node %s", ErrNodeCertRequired, peer.node, what, nodeID)
	}
	return nil
}
