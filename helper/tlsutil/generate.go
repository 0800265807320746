package tlsutil

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// CAInput describes a self-signed CA.
type CAInput struct {
	// CommonName defaults to "Nomad Agent CA <serial>", as upstream's.
	CommonName string
	// NotBefore defaults to a minute ago (clock skew between hosts);
	// Validity to five years.
	NotBefore time.Time
	Validity  time.Duration
}

// CertInput describes a certificate signed by a CA.
type CertInput struct {
	// CA and CAKey are the PEM files GenerateCA wrote.
	CA, CAKey []byte

	CommonName string
	DNSNames   []string
	IPs        []net.IP
	// ExtKeyUsage says which side of a TLS link the certificate may be:
	// servers and clients both (they serve HTTPS and dial RPC), a CLI
	// user's only the client side.
	ExtKeyUsage []x509.ExtKeyUsage

	// NotBefore defaults to a minute ago; Validity to one year.
	NotBefore time.Time
	Validity  time.Duration
}

// Validity defaults, upstream's: five years for a CA, one for a
// certificate.
const (
	DefaultCAValidity   = 5 * 365 * 24 * time.Hour
	DefaultCertValidity = 365 * 24 * time.Hour
)

// GenerateCA returns a new CA certificate and its private key, PEM encoded.
func GenerateCA(in CAInput) (certPEM, keyPEM []byte, err error) {
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	serial, err := newSerial()
	if err != nil {
		return nil, nil, err
	}
	name := in.CommonName
	if name == "" {
		name = "Nomad Agent CA " + serial.String()
	}
	notBefore, notAfter := window(in.NotBefore, in.Validity, DefaultCAValidity)
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: name, Organization: []string{"Nomad"}},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		SubjectKeyId:          keyID(key.Public()),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, fmt.Errorf("creating CA certificate: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

// GenerateCert returns a certificate signed by in.CA and its private key,
// PEM encoded.
func GenerateCert(in CertInput) (certPEM, keyPEM []byte, err error) {
	ca, caKey, err := parseCA(in.CA, in.CAKey)
	if err != nil {
		return nil, nil, err
	}
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	serial, err := newSerial()
	if err != nil {
		return nil, nil, err
	}
	notBefore, notAfter := window(in.NotBefore, in.Validity, DefaultCertValidity)
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: in.CommonName},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:           in.ExtKeyUsage,
		DNSNames:              in.DNSNames,
		IPAddresses:           in.IPs,
		SubjectKeyId:          keyID(key.Public()),
		AuthorityKeyId:        ca.SubjectKeyId,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("signing certificate: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

func window(notBefore time.Time, validity, def time.Duration) (time.Time, time.Time) {
	if notBefore.IsZero() {
		notBefore = time.Now().Add(-time.Minute)
	}
	if validity <= 0 {
		validity = def
	}
	return notBefore, notBefore.Add(validity)
}

func newKey() (*ecdsa.PrivateKey, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating key: %w", err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding key: %w", err)
	}
	return key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

func newSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("generating serial number: %w", err)
	}
	return n, nil
}

func keyID(pub crypto.PublicKey) []byte {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil
	}
	sum := sha256.Sum256(der)
	return sum[:20]
}

// parseCA reads a CA certificate and its key; the key must be the
// certificate's, or every certificate signed with it would fail to verify.
func parseCA(certPEM, keyPEM []byte) (*x509.Certificate, crypto.Signer, error) {
	b, _ := pem.Decode(certPEM)
	if b == nil || b.Type != "CERTIFICATE" {
		return nil, nil, errors.New("CA file holds no PEM certificate")
	}
	ca, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing CA certificate: %w", err)
	}
	if !ca.IsCA {
		return nil, nil, errors.New("CA file's certificate is not a CA")
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil {
		return nil, nil, errors.New("CA key file holds no PEM key")
	}
	key, err := parseKey(kb)
	if err != nil {
		return nil, nil, err
	}
	if !key.Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(ca.PublicKey) {
		return nil, nil, errors.New("CA key does not belong to the CA certificate")
	}
	return ca, key, nil
}

func parseKey(b *pem.Block) (crypto.Signer, error) {
	if k, err := x509.ParseECPrivateKey(b.Bytes); err == nil {
		return k, nil
	}
	if k, err := x509.ParsePKCS1PrivateKey(b.Bytes); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing CA key: %w", err)
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, errors.New("CA key cannot sign")
	}
	return s, nil
}
