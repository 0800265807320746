package checks

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// The http probe makes its own request (not http.Transport's): the
// check's method, headers and Host override reach the server, the body
// is the output, and the connection asks to be closed.
func TestHTTP_RequestAsConfigured(t *testing.T) {
	var got *http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Clone(context.Background())
		_, _ = w.Write([]byte("ready"))
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	out := probeHTTP(context.Background(), &structs.ServiceCheck{
		Path: "health?full=1", Method: "HEAD",
		Header: map[string][]string{"X-Probe": {"a", "b"}, "Host": {"svc.internal"}},
	}, addr)
	must.EqOp(t, structs.CheckStatusPassing, out.status, must.Sprint(out.output))
	must.Eq(t, http.MethodHead, got.Method)
	must.Eq(t, "/health?full=1", got.URL.RequestURI())
	must.Eq(t, []string{"a", "b"}, got.Header.Values("X-Probe"))
	must.Eq(t, "svc.internal", got.Host)
	must.True(t, got.Close, must.Sprint("Connection: close"))

	out = probeHTTP(context.Background(), &structs.ServiceCheck{Path: "/"}, addr)
	must.Eq(t, "ready", out.output)
}

// A server that accepts and never answers fails the check when the
// check's timeout (the context) ends, instead of holding its goroutine;
// a refused connection names the request as http.Client's error did.
func TestHTTP_SilentServerTimesOut(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must.NoError(t, err)
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	out := probeHTTP(ctx, &structs.ServiceCheck{Path: "/"}, l.Addr().String())
	must.EqOp(t, structs.CheckStatusCritical, out.status)
	must.StrContains(t, out.output, "context deadline exceeded")

	free, err := net.Listen("tcp", "127.0.0.1:0")
	must.NoError(t, err)
	addr := free.Addr().String()
	free.Close()
	out = probeHTTP(context.Background(), &structs.ServiceCheck{Path: "/x"}, addr)
	must.EqOp(t, structs.CheckStatusCritical, out.status)
	must.StrContains(t, out.output, `Get "http://`+addr+`/x": dial tcp`)
}
