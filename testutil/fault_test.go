package testutil_test

import (
	"context"
	"io"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/clienttest"
	"github.com/nomad-edge/nomad/helper/pool"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil"
	"github.com/nomad-edge/nomad/testutil/fault"
)

// echoServer accepts on l and echoes what each connection sends.
func echoServer(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() { _, _ = io.Copy(c, c); c.Close() }()
	}
}

func echo(c io.ReadWriter) error {
	if _, err := c.Write([]byte("x")); err != nil {
		return err
	}
	_, err := io.ReadFull(c, make([]byte, 1))
	return err
}

// netFaults checks what isolating and healing do on n, whose client host
// dials addr on the server host with d: Reset closes open connections and
// refuses dials; Blackhole makes bytes vanish and dials hang to their
// deadline; healing restores new dials and ends blackholed connections.
// MemNet and the loopback FaultNet both pass it: one vocabulary, one
// behaviour.
func netFaults(t *testing.T, n fault.Net, d pool.Dialer, client, server, addr string) {
	t.Helper()
	dial := func(timeout time.Duration) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		return d.DialContext(ctx, "tcp", addr)
	}

	c, err := dial(time.Second)
	must.NoError(t, err)
	must.NoError(t, echo(c))
	n.Isolate(client, fault.Reset)
	must.Error(t, echo(c), must.Sprint("an open connection is closed"))
	_, err = dial(time.Second)
	must.ErrorIs(t, err, fault.ErrPartitioned)

	n.Heal(client)
	c, err = dial(time.Second)
	must.NoError(t, err)
	n.Isolate(server, fault.Blackhole)
	start := time.Now()
	_, err = dial(300 * time.Millisecond)
	must.ErrorIs(t, err, fault.ErrPartitioned)
	must.GreaterEq(t, 300*time.Millisecond, time.Since(start), must.Sprint("a blackholed dial hangs to its deadline"))
	_, err = c.Write([]byte("x"))
	must.NoError(t, err, must.Sprint("writes into a blackhole succeed and vanish"))

	n.Heal(server)
	_, err = c.Write([]byte("x"))
	must.Error(t, err, must.Sprint("a blackholed connection is gone after the heal"))
	c, err = dial(time.Second)
	must.NoError(t, err)
	must.NoError(t, echo(c))
	c.Close()
}

// Isolating a host of the in-memory network fails what crosses its links
// the way a real partition does, and healing restores them: the in-memory
// cluster's tests are only as true as these faults.
func TestMemNet_IsolateAndHeal(t *testing.T) {
	testutil.Bubble(t, func(t *testing.T) {
		n := testutil.NewMemNet()
		defer n.Close()
		l, err := n.Listen("10.0.0.1:4647")
		must.NoError(t, err)
		defer l.Close()
		go echoServer(l)
		netFaults(t, n, n.Dialer("10.0.1.1"), "10.0.1.1", "10.0.0.1", "10.0.0.1:4647")
	})
}

// The loopback network between real-socket servers fails and heals as the
// in-memory one does, so a scenario means the same on either harness.
func TestFaultNet_IsolateAndHeal(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must.NoError(t, err)
	defer l.Close()
	go echoServer(l)
	n := testutil.NewFaultNet()
	const client = "127.0.0.1:1" // the dialing server's RPC address
	netFaults(t, n, n.Dialer(func() string { return client }), client, l.Addr().String(), l.Addr().String())
}

// A stalled host's dials and writes wait, without failing, until the heal
// and then go through, as TCP carries a short outage; it is the fault
// under which a client must not give up on a call too early.
func TestMemNet_StallHoldsUntilHeal(t *testing.T) {
	testutil.Bubble(t, func(t *testing.T) {
		n := testutil.NewMemNet()
		defer n.Close()
		l, err := n.Listen("10.0.0.1:4647")
		must.NoError(t, err)
		defer l.Close()
		go echoServer(l)
		d := n.Dialer("10.0.1.1")
		c, err := d.DialContext(context.Background(), "tcp", "10.0.0.1:4647")
		must.NoError(t, err)

		n.Isolate("10.0.1.1", fault.Stall)
		echoed := make(chan error, 1)
		go func() { echoed <- echo(c) }()
		dialed := make(chan error, 1)
		go func() {
			c2, err := d.DialContext(context.Background(), "tcp", "10.0.0.1:4647")
			if err == nil {
				err = echo(c2)
				c2.Close()
			}
			dialed <- err
		}()
		time.Sleep(time.Hour)
		synctest.Wait()
		must.Eq(t, 0, len(echoed)+len(dialed), must.Sprint("held for an hour, neither answered nor failed"))

		n.Heal("10.0.1.1")
		must.NoError(t, <-echoed, must.Sprint("the held write goes through"))
		must.NoError(t, <-dialed, must.Sprint("the held dial connects"))
		c.Close()
	})
}

// countingRPC answers every call, or holds it until release closes.
type countingRPC struct{ release chan struct{} }

func (r *countingRPC) RPC(_ string, _, reply any) error {
	if r.release != nil {
		<-r.release
	}
	*reply.(*int) = 1
	return nil
}

// linkFaults checks how link fails a call: Reset at once, Blackhole
// after the blackhole timeout (or the heal), Stall by holding it until
// the heal and then letting it through.
func linkFaults(t *testing.T, link fault.Link, blackhole time.Duration, call func() error) {
	t.Helper()
	must.NoError(t, call())
	link.Cut(fault.Reset)
	must.ErrorIs(t, call(), fault.ErrPartitioned)
	link.Cut(fault.Blackhole)
	start := time.Now()
	must.ErrorIs(t, call(), fault.ErrPartitioned)
	must.Eq(t, blackhole, time.Since(start), must.Sprint("a blackholed call hangs, then fails"))
	link.Heal()
	must.NoError(t, call())

	link.Cut(fault.Stall)
	held := make(chan error, 1)
	go func() { held <- call() }()
	time.Sleep(time.Hour)
	synctest.Wait()
	must.Eq(t, 0, len(held), must.Sprint("a stalled call waits"))
	link.Heal()
	must.NoError(t, <-held, must.Sprint("and goes through on the heal"))
}

// A client's link to the servers and the client's fake server fail a call
// the same way in each mode, so a client test means the same on either.
func TestLinks_FailAlike(t *testing.T) {
	t.Run("FaultableRPC", func(t *testing.T) {
		testutil.Bubble(t, func(t *testing.T) {
			link := testutil.NewFaultableRPC(&countingRPC{})
			linkFaults(t, link, link.BlackholeTimeout, func() error { var out int; return link.RPC("X", nil, &out) })
		})
	})
	t.Run("FakeServer", func(t *testing.T) {
		testutil.Bubble(t, func(t *testing.T) {
			srv := clienttest.NewFakeServer()
			defer srv.Close()
			linkFaults(t, srv, clienttest.DefaultBlackholeTimeout, func() error {
				var resp structs.NodeUpdateResponse
				return srv.RPC("Node.Register", &structs.NodeRegisterRequest{Node: contractNode()}, &resp)
			})
		})
	})
}

// A cut fails the call in flight on a client's link, as a blocking query
// loses its connection with the link.
func TestFaultableRPC_CutFailsCallInFlight(t *testing.T) {
	testutil.Bubble(t, func(t *testing.T) {
		inner := &countingRPC{release: make(chan struct{})}
		link := testutil.NewFaultableRPC(inner)
		inFlight := make(chan error, 1)
		go func() { var o int; inFlight <- link.RPC("X", nil, &o) }()
		synctest.Wait()
		link.Cut(fault.Reset)
		must.ErrorIs(t, <-inFlight, fault.ErrPartitioned)
		close(inner.release)
	})
}
