package nomad

import (
	"errors"
	"fmt"
	"time"

	"github.com/nomad-edge/nomad/helper/tlsutil"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// The cluster CA of automatic mutual TLS (tls.auto). The first leader
// makes it; its certificate is in raft in the clear and its key sealed
// with the keyring's active root key, as variables are, so every server
// (they all hold the root keys) can sign and nothing outside the servers'
// keystores can. A rotation makes a new active CA in the same raft entry
// that retires the old one, which stays trusted until the last
// certificate it may have signed has expired.

// ErrNoTLSCA is returned while the cluster has no CA yet: tls.auto is off
// on the leader, or the leader has not made one.
var ErrNoTLSCA = errors.New("the cluster has no TLS CA yet (tls.auto)")

// tlsCAAAD binds a CA key's ciphertext to its CA.
func tlsCAAAD(id string) []byte { return []byte("tls-ca:" + id) }

// autoTLSOn reports whether this server runs tls.auto.
func (s *Server) autoTLSOn() bool { return s.config.TLS != nil && s.config.TLS.Auto }

// newTLSCA makes a CA whose key is sealed with the active root key.
func (s *Server) newTLSCA() (*structs.TLSCA, error) {
	active, err := s.State().ActiveRootKeyMeta(nil)
	if err != nil {
		return nil, err
	}
	if active == nil {
		return nil, fmt.Errorf("%w: the keyring has no active root key yet", structs.ErrUnknownRootKey)
	}
	now := s.clock.Now()
	id := structs.GenerateUUID()
	certPEM, keyPEM, err := tlsutil.GenerateCA(tlsutil.CAInput{
		CommonName: "Nomad Cluster CA " + id[:8] + " (" + s.config.Region + ")",
		NotBefore:  now.Add(-time.Minute),
	})
	if err != nil {
		return nil, err
	}
	aead, err := s.encrypter.aead(active.KeyID)
	if err != nil {
		return nil, err
	}
	sealed, err := seal(aead, keyPEM, tlsCAAAD(id))
	if err != nil {
		return nil, err
	}
	fp, err := tlsutil.Fingerprint(certPEM)
	if err != nil {
		return nil, err
	}
	cert, err := tlsutil.ParseCert(certPEM)
	if err != nil {
		return nil, err
	}
	return &structs.TLSCA{
		ID: id, CertPEM: certPEM, Fingerprint: fp, KeyCiphertext: sealed, KeyID: active.KeyID,
		NotBefore: cert.NotBefore, NotAfter: cert.NotAfter, Active: true,
	}, nil
}

// ensureTLSCA gives a cluster running tls.auto its first CA: the leader
// makes one when raft holds none.
func (s *Server) ensureTLSCA() error {
	if !s.autoTLSOn() {
		return nil
	}
	active, err := s.State().ActiveTLSCA(nil)
	if err != nil || active != nil {
		return err
	}
	ca, err := s.newTLSCA()
	if err != nil {
		return err
	}
	if _, _, err := s.raftApply(structs.TLSCAUpsertRequestType, &structs.TLSCAUpsertRequest{CAs: []*structs.TLSCA{ca}}); err != nil {
		return err
	}
	s.logger.Info("created the cluster TLS CA", "ca_id", ca.ID, "fingerprint", ca.Fingerprint)
	return nil
}

// rotateTLSCA makes a new active CA, retires the active one (trusted
// until the certificates it signed have expired) and forgets retired CAs
// whose certificates all have.
func (s *Server) rotateTLSCA() (*structs.TLSCA, uint64, error) {
	cas, err := s.State().TLSCAs(nil)
	if err != nil {
		return nil, 0, err
	}
	ca, err := s.newTLSCA()
	if err != nil {
		return nil, 0, err
	}
	now := s.clock.Now()
	req := &structs.TLSCAUpsertRequest{CAs: []*structs.TLSCA{ca}}
	for _, old := range cas {
		switch {
		case old.Active:
			key, err := s.caKey(old)
			if err != nil {
				return nil, 0, err
			}
			if ca.CrossPEM, err = tlsutil.CrossSign(ca.CertPEM, old.CertPEM, key); err != nil {
				return nil, 0, err
			}
			r := *old
			r.Active = false
			r.RetireAfter = now.Add(s.config.TLS.CertTTL())
			req.CAs = append(req.CAs, &r)
		case !now.Before(old.RetireAfter):
			req.Delete = append(req.Delete, old.ID)
		}
	}
	_, index, err := s.raftApply(structs.TLSCAUpsertRequestType, req)
	if err != nil {
		return nil, 0, err
	}
	ca.CreateIndex, ca.ModifyIndex = index, index
	s.logger.Info("rotated the cluster TLS CA", "ca_id", ca.ID, "fingerprint", ca.Fingerprint)
	return ca, index, nil
}

// activeCAKey returns the active CA and its key in the clear.
func (s *Server) activeCAKey() (*structs.TLSCA, []byte, error) {
	ca, err := s.State().ActiveTLSCA(nil)
	if err != nil {
		return nil, nil, err
	}
	if ca == nil {
		return nil, nil, ErrNoTLSCA
	}
	key, err := s.caKey(ca)
	if err != nil {
		return nil, nil, err
	}
	return ca, key, nil
}

// caKey is ca's key in the clear.
func (s *Server) caKey(ca *structs.TLSCA) ([]byte, error) {
	aead, err := s.encrypter.aead(ca.KeyID)
	if err != nil {
		return nil, err
	}
	key, err := open(aead, ca.KeyCiphertext, tlsCAAAD(ca.ID))
	if err != nil {
		return nil, fmt.Errorf("decrypting the key of TLS CA %s: %w", ca.ID, err)
	}
	return key, nil
}

// servingChain is what follows the server's own certificate in its
// handshakes: the active CA's certificate cross-signed by the one it
// replaced while that one is trusted (nodes that have not renewed since
// the rotation trust only it), then the active CA's own.
func servingChain(cas []*structs.TLSCA, active *structs.TLSCA, now time.Time) []byte {
	var chain []byte
	if len(active.CrossPEM) > 0 {
		for _, ca := range cas {
			if !ca.Active && now.Before(ca.RetireAfter) {
				chain = append(chain, active.CrossPEM...)
				break
			}
		}
	}
	return append(chain, active.CertPEM...)
}

// trustedCAs returns the certificates of the CAs that are trusted at now:
// the active one and the retired ones whose certificates may still live.
func trustedCAs(cas []*structs.TLSCA, now time.Time) [][]byte {
	var out [][]byte
	for _, ca := range cas {
		if ca.Active || now.Before(ca.RetireAfter) {
			out = append(out, ca.CertPEM)
		}
	}
	return out
}

func (f *nomadFSM) applyTLSCAUpsert(req *structs.TLSCAUpsertRequest, index uint64) error {
	return f.State().UpsertTLSCAs(index, req)
}
