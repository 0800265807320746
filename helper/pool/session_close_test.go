package pool_test

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/yamux"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/helper/pool"
)

// slowClose is a connection whose Close waits for release: the time a
// loaded machine takes to get round to closing a session's streams.
type slowClose struct {
	net.Conn
	release chan struct{}
	once    sync.Once
}

func (c *slowClose) Close() error {
	<-c.release
	var err error
	c.once.Do(func() { err = c.Conn.Close() })
	return err
}

// Reads parked on the streams of a session that starts to close end at
// once, before yamux has marked the streams closed: left to yamux, each
// wakes on the session's done channel, finds its stream open and parks
// again, a spin that lasts until the session's Close reaches the streams.
// And a deadline set after the session ended does not park a read again.
func TestEndReadsWhenDone_ReadsEndWhileTheSessionCloses(t *testing.T) {
	a, b := net.Pipe()
	conn := &slowClose{Conn: a, release: make(chan struct{})}
	defer close(conn.release)
	cfg := yamux.DefaultConfig()
	cfg.LogOutput = io.Discard
	client, err := yamux.Client(conn, cfg)
	must.NoError(t, err)
	server, err := yamux.Server(b, cfg)
	must.NoError(t, err)
	defer server.Close()
	go func() {
		for {
			if _, err := server.Accept(); err != nil {
				return
			}
		}
	}()

	done := pool.SessionContext(client)
	const readers = 100
	ended := make(chan error, readers)
	var streams []net.Conn
	for range readers {
		raw, err := client.Open()
		must.NoError(t, err)
		st := pool.EndReadsWhenDone(done, raw)
		streams = append(streams, st)
		go func() {
			var buf [1]byte
			_, err := st.Read(buf[:])
			ended <- err
		}()
	}
	go client.Close() // held in the connection's Close
	for range readers {
		select {
		case err := <-ended:
			ne, ok := err.(net.Error)
			must.True(t, ok && ne.Timeout(), must.Sprintf("a timeout, not %v", err))
		case <-time.After(10 * time.Second):
			t.Fatal("a read parked on a closing session's stream did not end")
		}
	}
	// A read deadline set after the end is the end.
	st := streams[0]
	must.NoError(t, st.SetReadDeadline(time.Now().Add(time.Hour)))
	go func() {
		var buf [1]byte
		_, err := st.Read(buf[:])
		ended <- err
	}()
	select {
	case err := <-ended:
		must.Error(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("a deadline set after the session ended parked a read again")
	}
	for _, st := range streams {
		_ = st.Close()
	}
}
