package agent

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"

	"github.com/nomad-edge/nomad/acl"
	"github.com/nomad-edge/nomad/helper/snapshot"
	"github.com/nomad-edge/nomad/nomad"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// snapshotRoutes registers GET (save) and PUT/POST (restore) of
// /v1/operator/snapshot, on the agent's API and on a server's
// pool.RPCClientHTTP connections, over which a server hands the request
// to the leader. The restore streams its body: a snapshot is no request
// body to hold in memory.
func (s *HTTPServer) snapshotRoutes(mux *http.ServeMux) {
	mux.Handle("GET /v1/operator/snapshot", s.wrapBody(s.operatorSnapshotSave, bodyStreamed))
	for _, m := range []string{http.MethodPut, http.MethodPost} {
		mux.Handle(m+" /v1/operator/snapshot", s.wrapBody(s.operatorSnapshotRestore, bodyStreamed))
	}
}

// operatorSnapshotSave handles GET /v1/operator/snapshot: the snapshot
// archive of the leader's state, or with ?stale of this server's. As
// upstream, the body's sha-256 goes ahead of it in a Digest header (the
// official client checks it), so the archive is spooled to the data
// directory first.
func (s *HTTPServer) operatorSnapshotSave(w http.ResponseWriter, r *http.Request) (any, error) {
	var q structs.QueryOptions
	if err := parseQueryOptions(r, &q); err != nil {
		return nil, err
	}
	srv, handed, err := s.snapshotServer(w, r, q.AllowStale)
	if err != nil || handed {
		return answeredIf(handed), err
	}
	if err := s.authorize(r, (*acl.ACL).IsManagement, "a management token"); err != nil {
		return nil, err
	}
	spool, err := os.CreateTemp(s.agent.dataDir, "snapshot-save-*.snap")
	if err != nil {
		return nil, fmt.Errorf("spooling the snapshot: %w", err)
	}
	defer os.Remove(spool.Name())
	defer spool.Close()
	h := sha256.New()
	if _, err := srv.SnapshotSave(io.MultiWriter(spool, h)); err != nil {
		return nil, err
	}
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	w.Header().Set("Digest", "sha-256="+base64.StdEncoding.EncodeToString(h.Sum(nil)))
	w.Header().Set("Content-Type", "application/x-gzip")
	if _, err := io.Copy(w, spool); err != nil {
		s.logger.Debug("sending snapshot", "error", err)
	}
	return answered{}, nil
}

// operatorSnapshotRestore handles PUT /v1/operator/snapshot: the body is a
// snapshot archive, verified whole before the leader restores it into the
// running cluster. The answer is empty, as upstream's.
func (s *HTTPServer) operatorSnapshotRestore(w http.ResponseWriter, r *http.Request) (any, error) {
	srv, handed, err := s.snapshotServer(w, r, false)
	if err != nil || handed {
		return answeredIf(handed), err
	}
	if err := s.authorize(r, (*acl.ACL).IsManagement, "a management token"); err != nil {
		return nil, err
	}
	a, err := snapshot.Read(r.Body, s.agent.dataDir)
	if err != nil {
		if errors.Is(err, snapshot.ErrCorrupt) {
			return nil, codedErrorf(http.StatusBadRequest, "failed to restore from snapshot: %v", err)
		}
		return nil, err
	}
	defer a.Close()
	if err := srv.SnapshotRestore(r.Context(), a); err != nil {
		if errors.Is(err, nomad.ErrUpstreamSnapshot) || errors.Is(err, nomad.ErrNotStateStream) {
			return nil, codedErrorf(http.StatusBadRequest, "failed to restore from snapshot: %v", err)
		}
		return nil, fmt.Errorf("failed to restore from snapshot: %w", err)
	}
	return answered{}, nil
}

// snapshotServer returns the server that serves a snapshot request here:
// this agent's when it leads (or, with stale, whatever its role).
// Otherwise the request, body and token with it, is handed on as it
// comes and handed is true: to the leader from a server, to a server from
// a client-only agent. A request a server handed on is not handed on
// again.
func (s *HTTPServer) snapshotServer(w http.ResponseWriter, r *http.Request, stale bool) (srv *nomad.Server, handed bool, err error) {
	if s.agent == nil {
		return nil, false, codedErrorf(http.StatusNotImplemented, "snapshots are served by servers")
	}
	if srv = s.agent.server; srv == nil {
		if s.agent.remote == nil {
			return nil, false, codedErrorf(http.StatusNotImplemented, "snapshots are served by servers")
		}
		return nil, true, s.proxyToServers(w, r)
	}
	if stale {
		return srv, false, nil
	}
	leader, err := srv.LeaderRPCAddr(r.Context())
	if err != nil {
		return nil, false, err
	}
	if leader == "" {
		return srv, false, nil
	}
	if r.Header.Get(forwardedHeader) != "" {
		return nil, false, structs.ErrNotLeader
	}
	r.Header.Set(forwardedHeader, "1")
	s.proxy(w, r, func(ctx context.Context) (net.Conn, error) { return srv.DialClientHTTP(ctx, leader) }, false)
	return nil, true, nil
}

func answeredIf(handed bool) any {
	if handed {
		return answered{}
	}
	return nil
}
