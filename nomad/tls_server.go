package nomad

import (
	"context"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/hashicorp/go-memdb"
	"github.com/hashicorp/serf/serf"

	"github.com/nomad-edge/nomad/helper/atomicfile"
	"github.com/nomad-edge/nomad/helper/pool"
	"github.com/nomad-edge/nomad/helper/tlsutil"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// The servers' own traffic under tls.auto: raft and server-to-server RPC
// go inside TLS with certificates of the cluster CA, both sides checked.
//
// A server that has no certificate cannot be checked by one, and the
// first servers of a cluster run raft before the CA (which lives in raft)
// exists. What they share from the start is the gossip key
// (server.encrypt), which tls.auto therefore requires: from it each
// derives a bootstrap key (HKDF), never sent, with which
//   - before this server knows any CA, it accepts plaintext raft and RPC
//     only from a dialer that proves the key (pool.RPCBootstrapAuth), and
//     closes those connections once it learns a CA (the bootstrap window);
//   - a server without a certificate asks a peer that has one for its own
//     (ServerTLS.IssueCert, over TLS, the request and the answer each
//     under an HMAC of the key), so it joins a cluster whose servers all
//     refuse plaintext.
// Once a server knows a CA it refuses every plaintext connection, and it
// dials servers with its certificate, checking theirs against the CAs
// it trusts. Its key, certificate and the CAs are kept under
// <data_dir>/tls so that a restarted server, whose state store holds no
// CA until its log is replayed, talks TLS at once.

// ErrTLSAutoNeedsEncrypt refuses a server of tls.auto without the gossip
// key: nothing else lets servers recognise each other before the CA.
var ErrTLSAutoNeedsEncrypt = errors.New("tls.auto requires server.encrypt on every server: the gossip key is the secret a new server proves to get its certificate and, before the cluster CA exists, to carry raft (make one with `nomad operator gossip keyring generate`)")

// ErrBadBootstrapProof refuses a proof, or a certificate request, made
// with another bootstrap key than this server's.
var ErrBadBootstrapProof = fmt.Errorf("%w: the bootstrap proof does not match this server's gossip key (server.encrypt)", structs.ErrPermissionDenied)

// errPlaintextCAKnown is why a server of tls.auto that knows a CA drops a
// plaintext connection, even a proven server's.
var errPlaintextCAKnown = fmt.Errorf("%w: this server holds the cluster CA, so servers too must present their certificate", ErrPlaintextRefusedAuto)

// methodServerIssueCert is the RPC that signs a server's certificate.
const methodServerIssueCert = "ServerTLS.IssueCert"

// Files under <data_dir>/tls.
const (
	serverTLSDir      = "tls"
	serverCertFile    = "server.pem"
	serverCertKeyFile = "server-key.pem"
	serverCAFile      = "ca.pem"
)

// autoTLSCheckInterval is how often a server of tls.auto looks at its
// certificate and its bootstrap connections (a CA change wakes it too).
const autoTLSCheckInterval = time.Second

// serverCertSkew bounds how far a certificate request's time may be from
// the signer's clock.
const serverCertSkew = 5 * time.Minute

// bootstrapKeyInfo names the bootstrap key in its derivation.
const bootstrapKeyInfo = "nomad-edge tls.auto server bootstrap key v1"

// checkAutoTLSConfig refuses tls.auto on a server without the gossip key
// (a dev server, alone with in-memory raft, needs none).
func checkAutoTLSConfig(cfg *Config) error {
	if cfg.TLS == nil || !cfg.TLS.Auto || cfg.DevMode || len(cfg.SerfEncryptKey) > 0 {
		return nil
	}
	return ErrTLSAutoNeedsEncrypt
}

// setupAutoTLS derives the bootstrap key and reads the certificate kept
// in the data dir, if any.
func (s *Server) setupAutoTLS() error {
	c := &s.autoCert
	c.kick = make(chan struct{}, 1)
	c.plain = map[net.Conn]struct{}{}
	if !s.autoTLSOn() {
		return nil
	}
	if len(s.config.SerfEncryptKey) > 0 {
		key, err := DeriveBootstrapKey(s.config.SerfEncryptKey)
		if err != nil {
			return err
		}
		c.key = key
	}
	if s.config.DevMode || s.config.InMemory || s.config.DataDir == "" {
		return nil
	}
	c.dir = filepath.Join(s.config.DataDir, serverTLSDir)
	var files [3][]byte
	var missing []string
	for i, name := range []string{serverCertFile, serverCertKeyFile, serverCAFile} {
		buf, err := os.ReadFile(filepath.Join(c.dir, name))
		switch {
		case errors.Is(err, os.ErrNotExist):
			missing = append(missing, name)
		case err != nil:
			return fmt.Errorf("reading the server's tls.auto credentials: %w", err)
		}
		files[i] = buf
	}
	switch len(missing) {
	case 3:
		return nil
	case 0:
	default:
		return fmt.Errorf("the server's tls.auto credentials in %s lack %v; remove the directory and the server gets a new certificate from its peers", c.dir, missing)
	}
	pair, err := tls.X509KeyPair(files[0], files[1])
	if err != nil {
		return fmt.Errorf("the server's tls.auto certificate in %s: %w; remove the directory and the server gets a new one from its peers", c.dir, err)
	}
	roots := tlsutil.SplitCertPEM(files[2])
	if len(roots) == 0 {
		return fmt.Errorf("the server's tls.auto CAs %s hold no certificate; remove the directory and the server gets new ones from its peers", filepath.Join(c.dir, serverCAFile))
	}
	c.cert, c.keyPEM, c.roots = &pair, files[1], roots
	c.gen.Add(1)
	return nil
}

// signedServerCert is a server certificate signed by the active CA.
type signedServerCert struct {
	Chain   []byte // the certificate, then servingChain
	CAID    string
	Crossed bool
	Roots   [][]byte // the CAs trusted at signing
}

// signServerCSR signs csr into a server certificate of the active CA,
// whose key this server must hold.
func (s *Server) signServerCSR(csr []byte, now time.Time) (*signedServerCert, error) {
	ca, key, err := s.activeCAKey()
	if err != nil {
		return nil, err
	}
	cas, err := s.State().TLSCAs(nil)
	if err != nil {
		return nil, err
	}
	in, err := tlsutil.RoleCert(tlsutil.RoleServer, s.config.Region)
	if err != nil {
		return nil, err
	}
	in.NotBefore, in.Validity = now.Add(-time.Minute), s.config.TLS.CertTTL()+time.Minute
	certPEM, err := tlsutil.SignCSR(tlsutil.SignCSRInput{CA: ca.CertPEM, CAKey: key, CSR: csr, Cert: in})
	if err != nil {
		return nil, err
	}
	chain := servingChain(cas, ca, now)
	return &signedServerCert{Chain: append(certPEM, chain...), CAID: ca.ID, Crossed: len(chain) > len(ca.CertPEM), Roots: trustedCAs(cas, now)}, nil
}

// takeLocked makes signed, with its key, the server's certificate and
// keeps it in the data dir.
func (c *autoCert) takeLocked(signed *signedServerCert, keyPEM []byte) error {
	pair, err := tls.X509KeyPair(signed.Chain, keyPEM)
	if err != nil {
		return err
	}
	if c.dir != "" {
		if err := os.MkdirAll(c.dir, 0o700); err != nil {
			return err
		}
		for name, data := range map[string][]byte{
			serverCertFile: signed.Chain, serverCertKeyFile: keyPEM, serverCAFile: slices.Concat(signed.Roots...),
		} {
			if err := atomicfile.Write(filepath.Join(c.dir, name), data, 0o600); err != nil {
				return fmt.Errorf("keeping the server's tls.auto certificate: %w", err)
			}
		}
	}
	c.cert, c.keyPEM, c.caID, c.crossed, c.roots = &pair, keyPEM, signed.CAID, signed.Crossed, signed.Roots
	c.gen.Add(1)
	return nil
}

// wake asks autoTLSLoop to look now.
func (c *autoCert) wake() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// Generation implements pool.Credentials: a new certificate redials the
// server's sessions with it.
func (c *autoCert) Generation() uint64 { return c.gen.Load() }

var _ pool.Credentials = (*autoCert)(nil)

// autoRoots are the CAs this server trusts for tls.auto: the state
// store's while it holds any, else the ones kept with its certificate.
func (s *Server) autoRoots(now time.Time) ([][]byte, error) {
	cas, err := s.State().TLSCAs(nil)
	if err != nil {
		return nil, err
	}
	if len(cas) > 0 {
		return trustedCAs(cas, now), nil
	}
	s.autoCert.mu.Lock()
	defer s.autoCert.mu.Unlock()
	return s.autoCert.roots, nil
}

// autoCAKnown reports whether this server knows a CA of tls.auto, which
// ends its bootstrap window: its state store holds one, or it kept one
// with a certificate still alive. A server back from an outage longer
// than its certificate's life, whose state holds no CA until its log is
// replayed (no snapshot has one), is in the window again: were every
// server so, none could talk TLS, and plaintext refused they could never
// elect the leader that replays their logs.
func (s *Server) autoCAKnown() bool {
	cas, err := s.State().TLSCAs(nil)
	if err != nil || len(cas) > 0 {
		return true // an unreadable state store reopens nothing
	}
	c := &s.autoCert
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.roots) > 0 && c.cert != nil && s.clock.Now().Before(c.cert.Leaf.NotAfter)
}

// verifyServerChain checks that chain (leaf first) is a server's of this
// region under roots, for usage.
func verifyServerChain(chain []*x509.Certificate, roots [][]byte, now time.Time, usage x509.ExtKeyUsage) error {
	pool, inter := x509.NewCertPool(), x509.NewCertPool()
	for _, pem := range roots {
		pool.AppendCertsFromPEM(pem)
	}
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	if _, err := chain[0].Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
		return fmt.Errorf("server certificate: %w", err)
	}
	return nil
}

// serverDialTLS is what this server dials other servers with: tls.rpc's
// configuration; under tls.auto its certificate once it has one, else
// nil (plaintext, with the bootstrap proof).
func (s *Server) serverDialTLS() *tls.Config {
	if s.tls != nil {
		return s.tls.outgoing
	}
	if !s.autoTLSOn() {
		return nil
	}
	if _, err := s.ownAutoCert(); err != nil {
		return nil
	}
	region := s.config.Region
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return s.ownAutoCert()
		},
		// The server's certificate names the region's role, not the
		// host: VerifyConnection checks it against the cluster's CAs.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the server presented no certificate")
			}
			if !slices.Contains(cs.PeerCertificates[0].DNSNames, tlsutil.ServerName(region)) {
				return fmt.Errorf("the certificate is not a server's of region %s", region)
			}
			now := s.clock.Now()
			roots, err := s.autoRoots(now)
			if err != nil {
				return err
			}
			return verifyServerChain(cs.PeerCertificates, roots, now, x509.ExtKeyUsageServerAuth)
		},
	}
}

// checkBootstrapProof challenges a connection that announced a bootstrap
// proof and checks its answer.
func (s *Server) checkBootstrapProof(conn net.Conn) error {
	key := s.autoCert.key
	if key == nil {
		return ErrBadBootstrapProof
	}
	nonce := make([]byte, pool.ServerNonceSize)
	if _, err := rand.Read(nonce); err != nil {
		return err
	}
	if _, err := conn.Write(nonce); err != nil {
		return err
	}
	proof := make([]byte, pool.ServerNonceSize)
	if _, err := io.ReadFull(conn, proof); err != nil {
		return fmt.Errorf("reading bootstrap proof: %w", err)
	}
	if !hmac.Equal(proof, pool.BootstrapProof(key, nonce)) {
		return ErrBadBootstrapProof
	}
	return nil
}

// trackPlain records a plaintext connection accepted in the bootstrap
// window; false when the window has closed meanwhile.
func (s *Server) trackPlain(conn net.Conn) bool {
	c := &s.autoCert
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.plain == nil {
		return false
	}
	c.plain[conn] = struct{}{}
	return true
}

// closePlain ends the bootstrap window: the plaintext connections
// accepted in it are closed (their dialers come back with certificates).
func (s *Server) closePlain() {
	c := &s.autoCert
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.plain) > 0 {
		s.logger.Info("tls.auto: the cluster CA is known; closing the servers' plaintext bootstrap connections", "count", len(c.plain))
	}
	for conn := range c.plain {
		conn.Close()
	}
	c.plain = nil
}

// autoTLSLoop keeps the server's certificate (fetched from a peer when it
// cannot issue one itself) and closes the bootstrap window once the CA is
// known.
func (s *Server) autoTLSLoop() {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		ws := memdb.NewWatchSet()
		_, _ = s.State().TLSCAs(ws)
		ctx, cancel := context.WithCancel(context.Background())
		changed := ws.WatchCh(ctx)
		select {
		case <-s.shutdownCh:
			cancel()
			return
		case <-t.C:
		case <-changed:
		case <-s.autoCert.kick:
		}
		cancel()
		if s.autoCAKnown() {
			s.closePlain()
		}
		cert, err := s.ownAutoCert()
		if err != nil || pastHalfLife(cert.Leaf, s.clock.Now()) {
			if err := s.fetchServerCert(); err != nil {
				s.logger.Debug("tls.auto: no certificate from the peers yet", "error", err)
			}
		}
		// What this pass did answers the wakes it caused.
		select {
		case <-s.autoCert.kick:
		default:
		}
		t.Reset(autoTLSCheckInterval)
	}
}

// AutoTLSCert is the server's certificate of tls.auto, nil while it has
// none.
func (s *Server) AutoTLSCert() *x509.Certificate {
	s.autoCert.mu.Lock()
	defer s.autoCert.mu.Unlock()
	if s.autoCert.cert == nil {
		return nil
	}
	return s.autoCert.cert.Leaf
}

// AutoTLSDir is where the server keeps its certificate of tls.auto
// (<data_dir>/tls), "" when it keeps none on disk.
func (s *Server) AutoTLSDir() string { return s.autoCert.dir }

// DeriveBootstrapKey is the bootstrap key of servers whose gossip key is
// gossipKey.
func DeriveBootstrapKey(gossipKey []byte) ([]byte, error) {
	return hkdf.Key(sha256.New, gossipKey, nil, bootstrapKeyInfo, 32)
}

// NewServerCertRequest is a request for a server certificate of region
// for csr, made at now under the gossip key.
func NewServerCertRequest(gossipKey []byte, region string, csr []byte, now time.Time) (*ServerCertRequest, error) {
	key, err := DeriveBootstrapKey(gossipKey)
	if err != nil {
		return nil, err
	}
	r := &ServerCertRequest{Region: region, CSR: csr, Time: now.UnixNano()}
	r.MAC = r.mac(key)
	return r, nil
}

// ServerCertRequest asks a server for a server certificate: the
// requester's CSR and time under an HMAC of the bootstrap key.
type ServerCertRequest struct {
	Region string
	CSR    []byte
	// Time is the requester's clock, Unix nanoseconds.
	Time int64
	MAC  []byte
}

// ServerCertResponse is the signed certificate and the CAs to trust,
// under an HMAC of the bootstrap key bound to the request.
type ServerCertResponse struct {
	Chain   []byte
	CAID    string
	Crossed bool
	Roots   [][]byte
	MAC     []byte
}

func (r *ServerCertRequest) mac(key []byte) []byte {
	var t [8]byte
	binary.BigEndian.PutUint64(t[:], uint64(r.Time))
	return fieldsMAC(key, "server-cert-request", []byte(r.Region), r.CSR, t[:])
}

func (r *ServerCertResponse) mac(key []byte, req *ServerCertRequest) []byte {
	fields := [][]byte{req.MAC, r.Chain, []byte(r.CAID), {boolByte(r.Crossed)}}
	return fieldsMAC(key, "server-cert-response", append(fields, r.Roots...)...)
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// fieldsMAC is an HMAC-SHA256 under key of label and fields, each
// length-prefixed so that no two lists of fields hash alike.
func fieldsMAC(key []byte, label string, fields ...[]byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(label))
	var n [8]byte
	for _, f := range fields {
		binary.BigEndian.PutUint64(n[:], uint64(len(f)))
		m.Write(n[:])
		m.Write(f)
	}
	return m.Sum(nil)
}

// ServerTLS is the endpoint of servers' certificates under tls.auto.
type ServerTLS struct{ srv *Server }

// IssueCert signs a server's certificate for a caller that proves the
// bootstrap key, when this server holds the active CA's key. Anyone may
// call it (a new server has no certificate yet): the proof decides.
func (e *ServerTLS) IssueCert(args *ServerCertRequest, reply *ServerCertResponse) error {
	s := e.srv
	if !s.autoTLSOn() {
		return fmt.Errorf("%w: tls.auto is not enabled on this server", structs.ErrInvalidRequest)
	}
	key := s.autoCert.key
	if key == nil || !hmac.Equal(args.MAC, args.mac(key)) {
		return ErrBadBootstrapProof
	}
	if args.Region != s.config.Region {
		return fmt.Errorf("%w: region %q, this server's is %q", structs.ErrInvalidRequest, args.Region, s.config.Region)
	}
	now := s.clock.Now()
	if d := now.Sub(time.Unix(0, args.Time)).Abs(); d > serverCertSkew {
		return fmt.Errorf("%w: the request's time is %s from this server's clock", structs.ErrInvalidRequest, d.Round(time.Second))
	}
	signed, err := s.signServerCSR(args.CSR, now)
	if err != nil {
		return err
	}
	*reply = ServerCertResponse{Chain: signed.Chain, CAID: signed.CAID, Crossed: signed.Crossed, Roots: signed.Roots}
	reply.MAC = reply.mac(key, args)
	return nil
}

// fetchServerCert gets this server a certificate from the first peer
// that signs one.
func (s *Server) fetchServerCert() error {
	key := s.autoCert.key
	if key == nil {
		return ErrTLSAutoNeedsEncrypt
	}
	in, err := tlsutil.RoleCert(tlsutil.RoleServer, s.config.Region)
	if err != nil {
		return err
	}
	csr, keyPEM, err := tlsutil.NewCSR(in.CommonName)
	if err != nil {
		return err
	}
	req := &ServerCertRequest{Region: s.config.Region, CSR: csr, Time: s.clock.Now().UnixNano()}
	req.MAC = req.mac(key)
	var errs []error
	for _, p := range s.regionServers() {
		if s.isShutdown() {
			return structs.ErrServerShutdown
		}
		if p.ID == s.id || p.Status != serf.StatusAlive || p.RPCAddr == nil {
			continue
		}
		err := s.askServerCert(p.RPCAddr.String(), req, keyPEM)
		if err == nil {
			s.logger.Info("tls.auto: got this server's certificate from a peer", "peer", p.Name)
			return nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", p.Name, err))
	}
	if len(errs) == 0 {
		return errors.New("no peer known yet")
	}
	return errors.Join(errs...)
}

// askServerCert asks the server at addr for a certificate and takes it.
func (s *Server) askServerCert(addr string, req *ServerCertRequest, keyPEM []byte) error {
	p := pool.NewPool(pool.Config{
		Dialer: s.config.Dialer,
		// Nothing to check the peer by yet: its answer's HMAC of the
		// bootstrap key is what authenticates it.
		TLS:         &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true},
		DialTimeout: 2 * time.Second, CallTimeout: 5 * time.Second,
	})
	defer p.Shutdown()
	var resp ServerCertResponse
	if err := p.RPC(addr, methodServerIssueCert, req, &resp, 0); err != nil {
		return err
	}
	if !hmac.Equal(resp.MAC, resp.mac(s.autoCert.key, req)) {
		return ErrBadBootstrapProof
	}
	pair, err := tls.X509KeyPair(resp.Chain, keyPEM)
	if err != nil {
		return err
	}
	var chain []*x509.Certificate
	for _, der := range pair.Certificate {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return err
		}
		chain = append(chain, c)
	}
	if err := verifyServerChain(chain, resp.Roots, s.clock.Now(), x509.ExtKeyUsageClientAuth); err != nil {
		return err
	}
	c := &s.autoCert
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.takeLocked(&signedServerCert{Chain: resp.Chain, CAID: resp.CAID, Crossed: resp.Crossed, Roots: resp.Roots}, keyPEM)
}
