package nomad

import (
	"bytes"
	"context"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/helper/pool"
	"github.com/nomad-edge/nomad/nomad/stream"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// secretProver proves secret, whichever it is.
type secretProver []byte

func (p secretProver) HasServerIdentity() bool         { return true }
func (p secretProver) ServerProof(nonce []byte) []byte { return pool.ServerProof(p, nonce) }

// pipeDialer hands out one end of a pipe as the dialed connection.
type pipeDialer struct{ conn net.Conn }

func (d pipeDialer) DialContext(context.Context, string, string) (net.Conn, error) {
	return d.conn, nil
}

// acceptProven has s accept a connection on which a server proves secret
// and returns what s takes its caller for.
func acceptProven(t *testing.T, s *Server, secret []byte) rpcPeer {
	t.Helper()
	dialed, accepted := net.Pipe()
	t.Cleanup(func() { dialed.Close(); accepted.Close() })
	dialErr := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := pool.Dial(ctx, pool.DialInput{Dialer: pipeDialer{dialed}, Kind: pool.RPCMultiplex, Prover: secretProver(secret)})
		dialErr <- err
	}()
	_, kind, peer, err := s.openConn(accepted)
	must.NoError(t, err)
	must.NoError(t, <-dialErr)
	must.Eq(t, pool.RPCMultiplex, kind)
	return peer
}

// A server that knows no servers' identity yet cannot check a proof; the
// connection it accepts then must count as a server's once it learns the
// identity, as it does when a follower that applied the identity first
// dials the leader before the leader's own FSM has: the dialer's pool
// keeps that connection for good, and taken for unproven for good it had
// every server-only RPC on it refused (the follower's node-session digests
// never reached the leader: TestNodeSession_SilentNodeDisconnectedWithinGrace
// flaked on it). A wrong proof never passes.
func TestCheckServerProof_CheckedOnceIdentityKnown(t *testing.T) {
	f, err := newFSM(fsmDeps{logger: hclog.NewNullLogger(), events: stream.NewEventBroker(stream.EventBrokerConfig{})})
	must.NoError(t, err)
	s := &Server{config: DefaultConfig(), fsm: f, identity: &identityCache{}, logger: hclog.NewNullLogger()}
	secret := bytes.Repeat([]byte{7}, serverIdentitySize)

	early := acceptProven(t, s, secret)
	forged := acceptProven(t, s, []byte("not the cluster's secret"))
	must.False(t, early.isServer(), must.Sprint("nothing to check the proof against yet"))
	must.ErrorIs(t, s.requireServer(early, "Keyring.Get"), ErrServerOnlyRPC)
	_, err = f.State().SetServerIdentity(10, &structs.ServerIdentity{ID: structs.ServerIdentityID, Secret: secret})
	must.NoError(t, err)

	must.True(t, early.isServer(), must.Sprint("the early proof is checked now"))
	must.NoError(t, s.requireServer(early, "Keyring.Get"))
	must.False(t, forged.isServer())
	must.ErrorIs(t, s.requireServer(forged, "Keyring.Get"), ErrServerOnlyRPC)
	must.True(t, acceptProven(t, s, secret).serverProof, must.Sprint("a proof made now is checked at once"))
}
