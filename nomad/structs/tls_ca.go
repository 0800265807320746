package structs

import "time"

// TLSCA is one certificate authority of the cluster's automatic mutual
// TLS (tls.auto): the servers keep its certificate in the clear and its
// private key encrypted with the keyring's root key KeyID, so that raft
// snapshots and the log never hold the key in the clear. One CA is active
// and signs; the ones a rotation retired stay trusted until the last
// certificate they signed has expired (RetireAfter).
type TLSCA struct {
	ID string
	// CertPEM is the CA certificate; Fingerprint the SHA-256 of its DER,
	// hex, what an introduction token carries so a new client can pin
	// the servers before it has the CA.
	CertPEM     []byte
	Fingerprint string
	// KeyCiphertext is the CA's PEM private key sealed with root key
	// KeyID (the associated data binds it to ID).
	KeyCiphertext []byte
	KeyID         string

	NotBefore time.Time
	NotAfter  time.Time
	// Active marks the CA that signs new certificates; exactly one is
	// active once the cluster has a CA.
	Active bool
	// RetireAfter, for a CA a rotation retired, is when the last
	// certificate it may have signed expires: until then it stays trusted,
	// after that the leader forgets it.
	RetireAfter time.Time
	// CrossPEM is this CA's certificate signed by the CA it replaced
	// (tlsutil.CrossSign): the servers send it in their chains while that
	// one is trusted, so a node that knows only the older CA still
	// verifies them until it renews onto this one.
	CrossPEM []byte

	CreateIndex uint64
	ModifyIndex uint64
}

// Stub is the CA without its key, as lists show it.
func (c *TLSCA) Stub() *TLSCAStub {
	return &TLSCAStub{
		ID: c.ID, Fingerprint: c.Fingerprint, CertPEM: string(c.CertPEM), KeyID: c.KeyID,
		NotBefore: c.NotBefore, NotAfter: c.NotAfter, Active: c.Active, RetireAfter: c.RetireAfter,
		CreateIndex: c.CreateIndex, ModifyIndex: c.ModifyIndex,
	}
}

// TLSCAStub is a CA as the operator API lists it: never its key.
type TLSCAStub struct {
	ID          string
	Fingerprint string
	CertPEM     string
	KeyID       string
	NotBefore   time.Time
	NotAfter    time.Time
	Active      bool
	RetireAfter time.Time
	CreateIndex uint64
	ModifyIndex uint64
}

// TLSCAUpsertRequest writes CAs (TLSCAUpsert raft entry): a new active CA
// and the one it retires go in one entry, so there is never a moment with
// two active CAs or none. Delete lists retired CAs the leader forgets.
type TLSCAUpsertRequest struct {
	CAs    []*TLSCA
	Delete []string
	WriteRequest
}

// TLSCAListRequest lists the cluster's CAs (GET /v1/operator/tls/ca).
type TLSCAListRequest struct {
	QueryOptions
}

// TLSCAListResponse lists them, the active one first.
type TLSCAListResponse struct {
	CAs []*TLSCAStub
	QueryMeta
}

// TLSCARotateRequest makes a new active CA (PUT /v1/operator/tls/ca/rotate).
type TLSCARotateRequest struct {
	WriteRequest
}

// TLSCARotateResponse names the new CA.
type TLSCARotateResponse struct {
	CA    *TLSCAStub
	Index uint64
}

// NodeCertRequest asks for a node's RPC certificate of tls.auto
// (Node.IssueCert), AuthToken being the node's secret. A first
// certificate is proved by IntroToken, the introduction token the node
// registered with; a renewal by CurrentCert, the certificate it holds,
// which may have expired only while the node is disconnected and inside
// its disconnect window. CSR is the node's certificate request: its key
// never leaves the node.
type NodeCertRequest struct {
	NodeID      string
	CSR         []byte
	IntroToken  string
	CurrentCert []byte
	WriteRequest
}

// NodeCertResponse carries the signed certificate and the CAs the node
// must trust for the servers (the active one first).
type NodeCertResponse struct {
	CertPEM []byte
	CAs     [][]byte
}
