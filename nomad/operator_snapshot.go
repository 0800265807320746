package nomad

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/nomad-edge/nomad/helper/snapshot"
	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// ErrUpstreamSnapshot wraps why the state.bin of a snapshot upstream
// Nomad wrote cannot be restored: a record upstreamrpc cannot read.
var ErrUpstreamSnapshot = errors.New("upstream snapshot state cannot be read")

// ErrNotStateStream is returned for a state.bin that is neither ours nor
// upstream's.
var ErrNotStateStream = errors.New("snapshot state is not a Nomad state stream")

// reassertTimeout bounds the wait for the leadership monitor to rebuild
// the leader's duties after a restore.
const reassertTimeout = time.Minute

// SnapshotSave takes a raft snapshot of this server's state and writes it
// to w as a snapshot archive (helper/snapshot). On a follower the snapshot
// is as stale as its state; the caller decides whether that will do. It
// returns the raft index the snapshot holds.
func (s *Server) SnapshotSave(w io.Writer) (uint64, error) {
	f := s.raft.Snapshot()
	if err := f.Error(); err != nil {
		return 0, fmt.Errorf("taking snapshot: %w", err)
	}
	meta, rc, err := f.Open()
	if err != nil {
		return 0, fmt.Errorf("opening snapshot: %w", err)
	}
	defer rc.Close()
	if err := snapshot.Write(w, meta, rc); err != nil {
		return 0, err
	}
	return meta.Index, nil
}

// SnapshotRestore replaces the cluster's state with the verified archive's,
// as upstream does: raft's Restore on the leader (followers catch up by
// InstallSnapshot), then the leader's duties are rebuilt from the restored
// state as on a change of leader (eval broker, blocked evaluations,
// heartbeat timers, periodic dispatcher, deployment watcher...). Only the
// leader restores. The state is checked to be ours before raft sees it:
// nothing is applied from a snapshot that cannot be.
func (s *Server) SnapshotRestore(ctx context.Context, a *snapshot.Archive) error {
	if !s.IsLeader() {
		return structs.ErrNotLeader
	}
	stream, _, err := persistStream(a.State, a.Meta.Size)
	if err != nil {
		return err
	}
	local, err := s.keepClusterIdentity(stream)
	if err != nil {
		return err
	}
	defer os.Remove(local.Name())
	defer local.Close()
	st, err := local.Stat()
	if err != nil {
		return err
	}
	meta := a.Meta
	meta.Size = st.Size()
	if err := s.raft.Restore(&meta, local, 0); err != nil {
		return fmt.Errorf("restoring snapshot: %w", err)
	}
	errCh := make(chan error, 1)
	timeout := time.NewTimer(reassertTimeout)
	defer timeout.Stop()
	select {
	case s.reassertCh <- errCh:
	case <-timeout.C:
		return errors.New("timed out waiting to rebuild the leader's state after the restore")
	case <-ctx.Done():
		return ctx.Err()
	case <-s.shutdownCh:
		return structs.ErrServerShutdown
	}
	select {
	case err := <-errCh:
		if err != nil {
			return fmt.Errorf("rebuilding the leader's state after the restore: %w", err)
		}
		return nil
	case <-timeout.C:
		return errors.New("timed out waiting to rebuild the leader's state after the restore")
	case <-s.shutdownCh:
		return structs.ErrServerShutdown
	}
}

// persistStream turns a snapshot archive's state.bin of size bytes into
// our FSM's persist stream (nomadFSM.Restore reads it) and its size (-1
// when not known beforehand). Ours is passed through. Upstream's is told
// apart by its first byte (snapshot.Sniff) and translated
// (upstreamPersistStream).
func persistStream(stateBin io.Reader, size int64) (io.Reader, int64, error) {
	br := bufio.NewReader(stateBin)
	format, err := snapshot.Sniff(br)
	if err != nil {
		return nil, 0, err
	}
	switch format {
	case snapshot.FormatOurs:
		return br, size, nil
	case snapshot.FormatUpstream:
		stream, err := upstreamPersistStream(br)
		if err != nil {
			return nil, 0, fmt.Errorf("%w: %w", ErrUpstreamSnapshot, err)
		}
		return stream, -1, nil
	}
	return nil, 0, ErrNotStateStream
}

// keepClusterIdentity copies the persist stream into a spooled file with
// the snapshot's servers' identity replaced by this cluster's. The
// identity belongs to the servers, as raft's membership does (which raft's
// Restore keeps too), not to the state: the leader proves it on the very
// connections that carry the snapshot to the followers, so a restored
// identity of another cluster would cut the leader off before they got it.
func (s *Server) keepClusterIdentity(stream io.Reader) (*os.File, error) {
	id, err := s.State().ServerIdentity(nil)
	if err != nil {
		return nil, err
	}
	spool, err := os.CreateTemp(s.spoolDir(), "snapshot-restore-*.bin")
	if err != nil {
		return nil, fmt.Errorf("spooling the snapshot: %w", err)
	}
	fail := func(err error) (*os.File, error) {
		spool.Close()
		os.Remove(spool.Name())
		return nil, err
	}
	bw := bufio.NewWriter(spool)
	enc := codec.NewEncoder(bw, structs.MsgpackHandle)
	err = eachRecord(bufio.NewReader(stream), func(kind state.SnapshotKind, obj any) error {
		if kind == state.SnapshotServerIdentity {
			return nil
		}
		return encodeRecord(enc, kind, obj)
	})
	if err != nil {
		return fail(err)
	}
	if id != nil {
		if err := encodeRecord(enc, state.SnapshotServerIdentity, id); err != nil {
			return fail(err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fail(err)
	}
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		return fail(err)
	}
	return spool, nil
}

// encodeRecord writes one kind, object pair of the persist stream.
func encodeRecord(enc *codec.Encoder, kind state.SnapshotKind, obj any) error {
	if err := enc.Encode(kind); err != nil {
		return fmt.Errorf("writing snapshot: %w", err)
	}
	if err := enc.Encode(obj); err != nil {
		return fmt.Errorf("writing snapshot: %w", err)
	}
	return nil
}

// spoolDir is where a restore spools its stream: the data dir of a server
// that keeps one on disk, the system's temporary directory for one in
// memory (-dev), whose data dir may not exist.
func (s *Server) spoolDir() string {
	if s.config.DevMode || s.config.InMemory {
		return ""
	}
	return s.config.DataDir
}
