package checks

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
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

// httpClients are the two clients http checks use: with and without TLS
// verification. Neither follows redirects, as upstream (a 3xx answers
// the check); keep-alives are off so a check opens a fresh connection,
// which is what it is checking.
var httpClients = func() map[bool]*http.Client {
	mk := func(skip bool) *http.Client {
		tr := &http.Transport{
			DisableKeepAlives: true,
			TLSClientConfig:   &tls.Config{InsecureSkipVerify: skip}, //nolint:gosec // the job's tls_skip_verify asks for it
		}
		return &http.Client{
			Transport:     tr,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	return map[bool]*http.Client{false: mk(false), true: mk(true)}
}()

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
	resp, err := httpClients[c.TLSSkipVerify].Do(req)
	if err != nil {
		return outcome{status: structs.CheckStatusCritical, output: err.Error()}
	}
	defer resp.Body.Close()
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
