package agent

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/nomad-edge/nomad/helper/pool"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// Node session redial delays: fast after a drop, since an edge link that
// came back should be usable at once, slower while no server answers.
const (
	nodeSessionMinWait = 500 * time.Millisecond
	nodeSessionMaxWait = 30 * time.Second
)

// startNodeSession keeps a session open from this client-only agent to
// one of its servers, over which the servers reach the node's /v1/client
// API (logs, fs, exec...) although they cannot dial it: edge nodes sit
// behind NAT. It redials whenever the session drops.
func (a *Agent) startNodeSession() {
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		select {
		case <-a.client.Ready():
		case <-a.stopCh:
			return
		}
		handler := a.http.sessionHandler()
		wait := nodeSessionMinWait
		for i := 0; ; i++ {
			servers := a.remote.Servers()
			addr := servers[i%len(servers)]
			start := time.Now()
			err := a.serveNodeSession(addr, handler)
			if err != nil {
				a.logger.Debug("node session ended", "server", addr, "error", err)
			}
			if time.Since(start) > nodeSessionMaxWait {
				wait = nodeSessionMinWait
			}
			t := time.NewTimer(wait/2 + rand.N(wait/2+1))
			select {
			case <-t.C:
			case <-a.stopCh:
				t.Stop()
				return
			}
			wait = min(wait*2, nodeSessionMaxWait)
		}
	}()
}

// serveNodeSession opens one session to addr and serves the streams the
// server opens until it closes or the agent stops.
func (a *Agent) serveNodeSession(addr string, handler http.Handler) error {
	tlsCfg, err := a.outgoingRPCTLS()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Shutdown must not wait out a dial into a dead link.
	go func() {
		select {
		case <-a.stopCh:
			cancel()
		case <-ctx.Done():
		}
	}()
	conn, err := pool.Dial(ctx, pool.DialInput{Addr: addr, TLS: tlsCfg, Kind: pool.RPCNodeSession})
	if err != nil {
		return err
	}
	if err := pool.NodeHello(conn, structs.NodeSessionHello{NodeID: a.client.NodeID(), SecretID: a.client.SecretID()}); err != nil {
		conn.Close()
		return err
	}
	cfg := yamux.DefaultConfig()
	cfg.LogOutput = io.Discard
	cfg.KeepAliveInterval = 15 * time.Second
	sess, err := yamux.Server(conn, cfg)
	if err != nil {
		conn.Close()
		return err
	}
	a.logger.Debug("node session open", "server", addr)
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 30 * time.Second}
	done := make(chan struct{})
	go func() {
		select {
		case <-a.stopCh:
			_ = srv.Close()
			sess.Close()
		case <-done:
		}
	}()
	err = srv.Serve(sess)
	close(done)
	sess.Close()
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
