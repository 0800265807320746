package agent

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nomad-edge/nomad/helper/connlimit"
)

// refusalWriteTimeout bounds the write of the 429 to a refused
// connection: the accept loop must never wait on a client that does not
// read.
const refusalWriteTimeout = 10 * time.Millisecond

// httpLimitsInput configures limitHTTPListener.
type httpLimitsInput struct {
	// MaxPerClient is limits.http_max_conns_per_client; 0 is no limit.
	MaxPerClient int
	// Plaintext is set when the API is plain HTTP: a refused connection
	// is then told why with a 429. Over HTTPS it is closed unanswered,
	// as there is no TLS session to answer in.
	Plaintext bool
	Logger    hclog.Logger
}

// limitHTTPListener caps the connections each client IP holds on l,
// counting raw TCP connections below any TLS.
func limitHTTPListener(l net.Listener, in httpLimitsInput) net.Listener {
	if in.MaxPerClient <= 0 {
		return l
	}
	body := fmt.Sprintf("Too many connections from your address: the agent allows %d per client IP (limits.http_max_conns_per_client)\n", in.MaxPerClient)
	return &limitListener{
		Listener: l,
		limiter:  connlimit.New(connlimit.Config{MaxPerClient: in.MaxPerClient, Logger: in.Logger}),
		answer:   in.Plaintext,
		refusal: []byte("HTTP/1.1 429 Too Many Requests\r\nContent-Type: text/plain; charset=utf-8\r\n" +
			fmt.Sprintf("Connection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)),
	}
}

type limitListener struct {
	net.Listener
	limiter *connlimit.Limiter
	answer  bool
	refusal []byte
}

// Accept returns the next connection within its client's limit; refused
// ones are answered and closed here, so net/http never sees them (an
// error from Accept would stop its Serve).
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		limited, err := l.limiter.Accept(c)
		if err == nil {
			return limited, nil
		}
		if l.answer {
			_ = c.SetWriteDeadline(time.Now().Add(refusalWriteTimeout))
			_, _ = c.Write(l.refusal)
		}
		c.Close()
	}
}

// tlsHandshakeListener hands net/http only connections that finished their
// TLS handshake within timeout (limits.https_handshake_timeout). Handshakes
// run on their own goroutines, so a slow one never holds up the others;
// net/http on its own would give each handshake its header timeout.
type tlsHandshakeListener struct {
	inner   net.Listener
	cfg     *tls.Config
	timeout time.Duration

	ready  chan net.Conn
	errc   chan error
	closed chan struct{}
	once   sync.Once
}

// newTLSHandshakeListener wraps inner in TLS; with timeout 0 handshakes
// are bounded by the HTTP server's header timeout alone.
func newTLSHandshakeListener(inner net.Listener, cfg *tls.Config, timeout time.Duration) net.Listener {
	if timeout <= 0 {
		return tls.NewListener(inner, cfg)
	}
	l := &tlsHandshakeListener{
		inner: inner, cfg: cfg, timeout: timeout,
		ready: make(chan net.Conn), errc: make(chan error), closed: make(chan struct{}),
	}
	go l.acceptLoop()
	return l
}

func (l *tlsHandshakeListener) acceptLoop() {
	for {
		c, err := l.inner.Accept()
		if err != nil {
			// Passed on one at a time: net/http backs off on temporary
			// errors (out of file descriptors) before asking again.
			select {
			case l.errc <- err:
			case <-l.closed:
				return
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		go l.handshake(c)
	}
}

func (l *tlsHandshakeListener) handshake(c net.Conn) {
	_ = c.SetDeadline(time.Now().Add(l.timeout))
	tc := tls.Server(c, l.cfg)
	if err := tc.Handshake(); err != nil {
		c.Close()
		return
	}
	_ = c.SetDeadline(time.Time{})
	select {
	case l.ready <- tc:
	case <-l.closed:
		tc.Close()
	}
}

func (l *tlsHandshakeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ready:
		return c, nil
	case err := <-l.errc:
		return nil, err
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *tlsHandshakeListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.inner.Close()
}

func (l *tlsHandshakeListener) Addr() net.Addr { return l.inner.Addr() }
