package checks

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// outcome is what one run of a check found.
type outcome struct {
	status     string // structs.CheckStatusPassing, Warning or Critical
	statusCode int
	output     string
}

// maxOutput bounds the output kept of a response body or a script, as
// Consul and upstream keep a few KiB.
const maxOutput = 4 << 10

// ExecFunc runs a script check's command in its task, as `alloc exec`
// does, until ctx ends; it returns the combined output and exit code. An
// error means the command could not be run at all.
type ExecFunc func(ctx context.Context, command string, args []string) (output []byte, exitCode int, err error)

// roundTrip sends req on a connection of its own and reads the answer,
// as http.Transport does for a request without keep-alive (a check opens
// a fresh connection, which is what it is checking), minus the pool and
// the two goroutines per connection the Transport runs: with 1,000 checks
// that was a third of the client's cost (BenchmarkRunner_1000HTTPChecks).
// Redirects are not followed, as upstream (a 3xx answers the check). The
// caller closes the returned connection after reading the body; the
// connection is closed when ctx ends.
func roundTrip(ctx context.Context, req *http.Request, skipVerify bool) (*http.Response, net.Conn, error) {
	host := req.URL.Host
	if _, _, err := net.SplitHostPort(host); err != nil {
		port := "80"
		if req.URL.Scheme == "https" {
			port = "443"
		}
		host = net.JoinHostPort(strings.Trim(host, "[]"), port)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		return nil, nil, err
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	fail := func(err error) (*http.Response, net.Conn, error) {
		stop()
		conn.Close()
		// The connection's deadline is the context's: its timeout can
		// fire a moment before the context's own timer does.
		var ne net.Error
		if ctx.Err() != nil {
			err = ctx.Err()
		} else if _, has := ctx.Deadline(); has && errors.As(err, &ne) && ne.Timeout() {
			err = context.DeadlineExceeded
		}
		return nil, nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if req.URL.Scheme == "https" {
		name, _, _ := net.SplitHostPort(host)
		tc := tls.Client(conn, &tls.Config{ServerName: strings.Trim(name, "[]"), InsecureSkipVerify: skipVerify}) //nolint:gosec // the job's tls_skip_verify asks for it
		if err := tc.HandshakeContext(ctx); err != nil {
			return fail(err)
		}
		conn = tc
	}
	req.Close = true
	if err := req.Write(conn); err != nil {
		return fail(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		return fail(err)
	}
	return resp, closeAfter{conn, stop}, nil
}

// closeAfter closes the connection and stops its context hook.
type closeAfter struct {
	net.Conn
	stop func() bool
}

func (c closeAfter) Close() error {
	c.stop()
	return c.Conn.Close()
}

// probeHTTP requests the check's path at addr: 2xx is passing, 429 (Too
// Many Requests) warning, anything else or no answer critical.
func probeHTTP(ctx context.Context, c *structs.ServiceCheck, addr string) outcome {
	scheme := c.Protocol
	if scheme == "" {
		scheme = "http"
	}
	method := c.Method
	if method == "" {
		method = http.MethodGet
	}
	path := c.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	req, err := http.NewRequestWithContext(ctx, method, scheme+"://"+addr+path, nil)
	if err != nil {
		return outcome{status: structs.CheckStatusCritical, output: err.Error()}
	}
	for k, vs := range c.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if h := c.Header["Host"]; len(h) > 0 {
		req.Host = h[0]
	}
	resp, conn, err := roundTrip(ctx, req, c.TLSSkipVerify)
	if err != nil {
		op := method[:1] + strings.ToLower(method[1:])
		return outcome{status: structs.CheckStatusCritical, output: (&url.Error{Op: op, URL: req.URL.String(), Err: err}).Error()}
	}
	defer conn.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxOutput))
	out := outcome{statusCode: resp.StatusCode, output: string(body)}
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		out.status = structs.CheckStatusPassing
		if out.output == "" {
			out.output = "nomad: http ok"
		}
	case resp.StatusCode == http.StatusTooManyRequests:
		out.status = structs.CheckStatusWarning
	default:
		out.status = structs.CheckStatusCritical
	}
	if out.output == "" {
		out.output = fmt.Sprintf("HTTP %s %s: %s", method, path, resp.Status)
	}
	return out
}

// probeTCP connects to addr.
func probeTCP(ctx context.Context, addr string) outcome {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return outcome{status: structs.CheckStatusCritical, output: err.Error()}
	}
	conn.Close()
	return outcome{status: structs.CheckStatusPassing, output: "nomad: tcp ok"}
}

// probeScript runs the command in its task: exit 0 is passing, 1
// warning, anything else critical, as Consul's script checks (and
// upstream's, which are Consul's).
func probeScript(ctx context.Context, c *structs.ServiceCheck, exec ExecFunc) outcome {
	if exec == nil {
		return outcome{status: structs.CheckStatusCritical, output: "script checks cannot run in this task"}
	}
	b, code, err := exec(ctx, c.Command, c.Args)
	if err != nil {
		return outcome{status: structs.CheckStatusCritical, output: err.Error()}
	}
	out := outcome{output: string(b[:min(len(b), maxOutput)])}
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		out.status = structs.CheckStatusCritical
		out.output = fmt.Sprintf("script timed out after %s", c.Timeout)
	case code == 0:
		out.status = structs.CheckStatusPassing
	case code == 1:
		out.status = structs.CheckStatusWarning
	default:
		out.status = structs.CheckStatusCritical
	}
	return out
}
