package tlsutil

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
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

// CrossSign returns CA certificate caPEM signed by the CA byCertPEM (key
// byKeyPEM) instead of itself: the same name and key, so what caPEM
// signed verifies through it for whoever trusts only the older CA (a CA
// rotation, while nodes learn the new one). It lives no longer than
// either CA.
func CrossSign(caPEM, byCertPEM, byKeyPEM []byte) ([]byte, error) {
	ca, err := ParseCert(caPEM)
	if err != nil {
		return nil, err
	}
	if !ca.IsCA {
		return nil, errors.New("cross-signing: the certificate is not a CA")
	}
	by, key, err := parseCA(byCertPEM, byKeyPEM)
	if err != nil {
		return nil, err
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	notAfter := ca.NotAfter
	if by.NotAfter.Before(notAfter) {
		notAfter = by.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               ca.Subject,
		NotBefore:             ca.NotBefore,
		NotAfter:              notAfter,
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              ca.KeyUsage,
		SubjectKeyId:          ca.SubjectKeyId,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, by, ca.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("cross-signing the CA: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
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

// Fingerprint is the SHA-256 of the first PEM certificate in certPEM, hex:
// what an operator compares, and what pins a CA before it is trusted.
func Fingerprint(certPEM []byte) (string, error) {
	b, _ := pem.Decode(certPEM)
	if b == nil || b.Type != "CERTIFICATE" {
		return "", errors.New("no PEM certificate")
	}
	return FingerprintDER(b.Bytes), nil
}

// FingerprintDER is Fingerprint of a certificate's DER bytes.
func FingerprintDER(der []byte) string {
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:])
}

// EncodeCert is cert, PEM encoded.
func EncodeCert(cert *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
}

// NewCSR makes a private key and a certificate request for it, PEM
// encoded: an agent of tls.auto keeps its key and sends only the request.
func NewCSR(commonName string) (csrPEM, keyPEM []byte, err error) {
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: commonName}}, key)
	if err != nil {
		return nil, nil, fmt.Errorf("creating certificate request: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), keyPEM, nil
}

// SignCSRInput is a certificate request to sign, and what to sign into
// the certificate: the names and lifetime are the signer's, never the
// request's (only its public key is taken).
type SignCSRInput struct {
	CA, CAKey []byte
	CSR       []byte
	Cert      CertInput
}

// SignCSR signs the public key of in.CSR into a certificate of in.Cert's
// names and lifetime.
func SignCSR(in SignCSRInput) ([]byte, error) {
	ca, caKey, err := parseCA(in.CA, in.CAKey)
	if err != nil {
		return nil, err
	}
	b, _ := pem.Decode(in.CSR)
	if b == nil || b.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("no PEM certificate request")
	}
	csr, err := x509.ParseCertificateRequest(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing certificate request: %w", err)
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, fmt.Errorf("certificate request signature: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	c := in.Cert
	notBefore, notAfter := window(c.NotBefore, c.Validity, DefaultCertValidity)
	if notAfter.After(ca.NotAfter) {
		notAfter = ca.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: c.CommonName},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:           c.ExtKeyUsage,
		DNSNames:              c.DNSNames,
		IPAddresses:           c.IPs,
		SubjectKeyId:          keyID(csr.PublicKey),
		AuthorityKeyId:        ca.SubjectKeyId,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, csr.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("signing certificate: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// SplitCertPEM returns each certificate of concatenated PEM, each kept as
// PEM; blocks of other types are skipped.
func SplitCertPEM(b []byte) [][]byte {
	var out [][]byte
	for {
		block, rest := pem.Decode(b)
		if block == nil {
			return out
		}
		if block.Type == "CERTIFICATE" {
			out = append(out, pem.EncodeToMemory(block))
		}
		b = rest
	}
}

// ParseCert reads the first PEM certificate of certPEM.
func ParseCert(certPEM []byte) (*x509.Certificate, error) {
	b, _ := pem.Decode(certPEM)
	if b == nil || b.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate")
	}
	return x509.ParseCertificate(b.Bytes)
}
