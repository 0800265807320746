package nomad

import (
	"crypto/x509"
	"fmt"
	"slices"
	"time"

	"github.com/nomad-edge/nomad/helper/tlsutil"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// Node certificates of tls.auto. A node's certificate names it (common
// name: its node ID) and the role client.<region>.nomad; it lives
// tls.auto_cert_ttl and the node renews it at half its life. It is
// revoked by purging the node: every check (verifyNodeCert) looks the
// node up, and a node the servers no longer know has no valid
// certificate, whatever its dates.

// nodeCertInput is what a node's certificate says.
func (s *Server) nodeCertInput(nodeID string) (tlsutil.CertInput, error) {
	in, err := tlsutil.RoleCert(tlsutil.RoleClient, s.config.Region)
	if err != nil {
		return in, err
	}
	now := s.clock.Now()
	in.CommonName = nodeID
	in.NotBefore = now.Add(-time.Minute)
	in.Validity = s.config.TLS.CertTTL() + time.Minute
	return in, nil
}

// nodeCertCheck is what verifyNodeCert decides on.
type nodeCertCheck struct {
	Cert   *x509.Certificate
	NodeID string
	Region string
	// Roots are the CAs trusted now (trustedCAs).
	Roots [][]byte
	Now   time.Time
	// Node is the node as the servers hold it, nil once purged; Allocs
	// its allocations.
	Node   *structs.Node
	Allocs []*structs.Allocation
}

// verifyNodeCert says why c.Cert is not node c.NodeID's valid
// certificate at c.Now, or nil. An expired certificate passes only
// while the node is disconnected with a disconnect window still open
// (renewalWindowOpen): a client cut off longer than its certificate's
// life can come back within its window, never after.
func verifyNodeCert(c nodeCertCheck) (expired bool, err error) {
	refuse := func(format string, args ...any) (bool, error) {
		return false, fmt.Errorf("%w: %s", structs.ErrNodeCertRefused, fmt.Sprintf(format, args...))
	}
	if c.Node == nil {
		return refuse("node %s is not known to the servers (purged nodes' certificates are revoked)", c.NodeID)
	}
	if c.Cert.Subject.CommonName != c.NodeID || !slices.Contains(c.Cert.DNSNames, tlsutil.ClientName(c.Region)) {
		return refuse("the certificate (%q) is not node %s's", c.Cert.Subject.CommonName, c.NodeID)
	}
	pool := x509.NewCertPool()
	for _, pem := range c.Roots {
		pool.AppendCertsFromPEM(pem)
	}
	at := c.Now
	if expired = !c.Now.Before(c.Cert.NotAfter); expired {
		// The chain is checked as of the certificate's last moment; the
		// window decides whether that moment is recent enough.
		at = c.Cert.NotAfter.Add(-time.Second)
	}
	if _, err := c.Cert.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: at, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return refuse("the certificate does not verify against this cluster's CAs: %v", err)
	}
	if expired && !renewalWindowOpen(c.Node, c.Allocs, c.Now) {
		return refuse("node %s's certificate expired at %s and the node is %s with no disconnect window open at %s; introduce it again (nomad node intro create)",
			c.NodeID, c.Cert.NotAfter.UTC().Format(time.RFC3339), c.Node.Status, c.Now.UTC().Format(time.RFC3339))
	}
	return expired, nil
}

// renewalWindowOpen reports whether node may still come back at now: it
// is disconnected and one of its allocations waits to reconnect inside
// its group's window (spec: disconnected clients, section 3).
func renewalWindowOpen(node *structs.Node, allocs []*structs.Allocation, now time.Time) bool {
	if node.Status != structs.NodeStatusDisconnected {
		return false
	}
	for _, a := range allocs {
		if end, ok := a.DisconnectTimeout(); ok && now.Before(end) {
			return true
		}
	}
	return false
}

// IssueCert signs a node's RPC certificate of tls.auto: its first, proved
// by its introduction token, or a renewal, proved by the certificate it
// holds (verifyNodeCert). Either way the node's secret is required.
func (n *Node) IssueCert(args *structs.NodeCertRequest, reply *structs.NodeCertResponse) error {
	if done, err := n.srv.forward("Node.IssueCert", args, reply); done {
		return err
	}
	if !n.srv.autoTLSOn() {
		return fmt.Errorf("%w: tls.auto is not enabled on this cluster's servers", structs.ErrInvalidRequest)
	}
	if args.NodeID == "" || len(args.CSR) == 0 {
		return fmt.Errorf("%w: NodeID and CSR", structs.ErrMissingField)
	}
	st := n.srv.State()
	node, err := st.NodeByID(nil, args.NodeID)
	if err != nil {
		return err
	}
	if node == nil {
		return fmt.Errorf("%w: node %s is not known to the servers (register first; purged nodes' certificates are revoked)", structs.ErrNodeCertRefused, args.NodeID)
	}
	if err := authorizeNode(node, args.AuthToken); err != nil {
		return err
	}
	now := n.srv.clock.Now()
	switch {
	case len(args.CurrentCert) > 0:
		cert, err := tlsutil.ParseCert(args.CurrentCert)
		if err != nil {
			return fmt.Errorf("%w: CurrentCert: %w", structs.ErrInvalidRequest, err)
		}
		cas, err := st.TLSCAs(nil)
		if err != nil {
			return err
		}
		allocs, err := st.AllocsByNode(nil, node.ID)
		if err != nil {
			return err
		}
		if _, err := verifyNodeCert(nodeCertCheck{Cert: cert, NodeID: node.ID, Region: n.srv.config.Region, Roots: trustedCAs(cas, now), Now: now, Node: node, Allocs: allocs}); err != nil {
			return err
		}
	case args.IntroToken != "":
		if err := n.srv.verifyIntroduction(node, args.IntroToken); err != nil {
			return fmt.Errorf("%w: %w", structs.ErrNodeCertRefused, err)
		}
	default:
		return fmt.Errorf("%w: a first certificate needs the node's introduction token, a renewal its current certificate", structs.ErrNodeCertRefused)
	}
	ca, key, err := n.srv.activeCAKey()
	if err != nil {
		return err
	}
	in, err := n.srv.nodeCertInput(node.ID)
	if err != nil {
		return err
	}
	if reply.CertPEM, err = tlsutil.SignCSR(tlsutil.SignCSRInput{CA: ca.CertPEM, CAKey: key, CSR: args.CSR, Cert: in}); err != nil {
		return fmt.Errorf("%w: %w", structs.ErrInvalidRequest, err)
	}
	cas, err := n.srv.State().TLSCAs(nil)
	if err != nil {
		return err
	}
	reply.CAs = trustedCAs(cas, now)
	return nil
}
