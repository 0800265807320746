package api

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"strings"
)

// Snapshot streams a snapshot archive of the servers' state
// (GET /v1/operator/snapshot): the leader's, or with q.AllowStale any
// server's. Reading it to the end checks it against the answer's Digest
// header; the caller must close it.
func (op *Operator) Snapshot(q *QueryOptions) (io.ReadCloser, error) {
	r, err := op.client.newRequest(http.MethodGet, "/v1/operator/snapshot")
	if err != nil {
		return nil, err
	}
	r.applyQuery(q)
	resp, _, err := op.client.do(r)
	if err != nil {
		return nil, err
	}
	digest := resp.Header.Get("Digest")
	algo, sum, ok := strings.Cut(digest, "=")
	if !ok || !strings.EqualFold(algo, "sha-256") {
		resp.Body.Close()
		return nil, fmt.Errorf("snapshot answer has no sha-256 Digest header (got %q)", digest)
	}
	want, err := base64.StdEncoding.DecodeString(sum)
	if err != nil {
		resp.Body.Close()
		return nil, fmt.Errorf("snapshot answer's Digest header: %w", err)
	}
	return &digestReader{rc: resp.Body, h: sha256.New(), want: want}, nil
}

// SnapshotRestore restores the archive read from in into the cluster
// (PUT /v1/operator/snapshot).
func (op *Operator) SnapshotRestore(in io.Reader, w *WriteOptions) (*WriteMeta, error) {
	r, err := op.client.newRequest(http.MethodPut, "/v1/operator/snapshot")
	if err != nil {
		return nil, err
	}
	r.applyWrite(w)
	r.rawBody = in
	resp, rtt, err := op.client.do(r)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return &WriteMeta{RequestTime: rtt}, nil
}

// ErrSnapshotDigest is returned at the end of a snapshot whose bytes do not
// match the Digest the agent sent ahead of them.
var ErrSnapshotDigest = errors.New("snapshot does not match its Digest header")

// digestReader hashes what it reads and, at the end, fails unless the
// hash is want.
type digestReader struct {
	rc   io.ReadCloser
	h    hash.Hash
	want []byte
}

func (d *digestReader) Read(p []byte) (int, error) {
	n, err := d.rc.Read(p)
	d.h.Write(p[:n])
	if errors.Is(err, io.EOF) && !bytes.Equal(d.h.Sum(nil), d.want) {
		return n, ErrSnapshotDigest
	}
	return n, err
}

func (d *digestReader) Close() error { return d.rc.Close() }
