package api

import (
	"net/http"
	"time"
)

// TLSCA is a CA of the cluster's automatic mutual TLS (tls.auto), as
// /v1/operator/tls/ca lists it: never its key.
type TLSCA struct {
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

// TLSCAs lists the cluster's CAs, the active one first.
func (o *Operator) TLSCAs(q *QueryOptions) ([]*TLSCA, *QueryMeta, error) {
	var out []*TLSCA
	qm, err := o.client.query("/v1/operator/tls/ca", &out, q)
	return out, qm, err
}

// TLSCARotate makes a new active CA; the old one stays trusted until the
// certificates it signed have expired.
func (o *Operator) TLSCARotate(w *WriteOptions) (*TLSCA, *WriteMeta, error) {
	var out struct{ CA *TLSCA }
	wm, err := o.client.write(http.MethodPut, "/v1/operator/tls/ca/rotate", nil, &out, w)
	if err != nil {
		return nil, nil, err
	}
	return out.CA, wm, nil
}
