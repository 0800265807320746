// Package security probes, from outside, what security.md's table "What
// an outsider on the network can do, by mode" promises: one real server
// agent per mode (defaults, client_introduction strict, tls.rpc, ACLs) on
// loopback, and the test process as a stranger who reaches its ports. The
// stranger speaks msgpack RPC with helper/pool, the agents' own client,
// and HTTP with net/http; every refusal is checked for the text
// security.md gives. Nothing here needs root; the connection-flood probe
// uses the loopback alias 127.0.0.2 and skips when the host cannot dial
// from it.
package security

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/e2e/internal/harness"
	"github.com/nomad-edge/nomad/helper/pool"
	"github.com/nomad-edge/nomad/helper/tlsutil"
	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil/wait"
)

func TestMain(m *testing.M) { harness.Main(m) }

// startServer starts a single-server cluster (bootstrap_expect 1) with
// inServer added to its server block and extra appended to its config,
// and waits until it leads and holds the servers' identity: before that
// it accepts raft from anyone (security.md, "What the servers check"),
// which is not what the probes are about.
func startServer(t *testing.T, ags *harness.Agents, inServer, extra string) *harness.Agent {
	t.Helper()
	p := harness.FreePorts(t)
	s := ags.Add(harness.AgentConfig{Name: "server", Ports: p, Config: harness.AgentHead(harness.DataDirVar, "server", p, false) + fmt.Sprintf(`log_level = "INFO"

server {
  enabled          = true
  bootstrap_expect = 1
%s}
`, inServer) + extra})
	s.Start()
	// The leader writes the identity before it takes up its duties and
	// says "cluster leadership acquired".
	wait.Poll(t, 30*time.Second, "the server leads and holds the servers' identity", func() (bool, string) {
		s.MustNotHaveDied()
		l := s.Leader()
		return l != "" && strings.Contains(s.Log(), "cluster leadership acquired"), fmt.Sprintf("leader %q", l)
	})
	return s
}

// startClient starts a client-only agent that knows only server (an
// address: the relay's, for the probes that read the link) and waits
// until the servers list its node ready; it returns the node's ID.
func startClient(t *testing.T, ags *harness.Agents, srv *harness.Agent, server, extra string) string {
	t.Helper()
	p := harness.Ports{HTTP: harness.FreePort(t)}
	c := ags.Add(harness.AgentConfig{Name: "client", Ports: p, Config: fmt.Sprintf(`name      = "client"
data_dir  = "@DATA_DIR@"
bind_addr = "127.0.0.1"
log_level = "INFO"

ports {
  http = %d
}

client {
  enabled = true
  servers = [%q]
}
`, p.HTTP, server) + extra})
	c.Start()
	var id string
	wait.Poll(t, 30*time.Second, "the client's node ready", func() (bool, string) {
		c.MustNotHaveDied()
		var nodes []struct{ ID, Name, Status string }
		if err := srv.GetJSON("/v1/nodes", &nodes); err != nil {
			return false, err.Error()
		}
		for _, n := range nodes {
			if n.Name == "client" && n.Status == "ready" {
				id = n.ID
				return true, ""
			}
		}
		return false, fmt.Sprintf("nodes: %+v", nodes)
	})
	return id
}

// outsider is how the stranger reaches a server's RPC port: tls nil is
// plaintext, else the given TLS (a certificate of the CA or not).
type outsider struct {
	addr string
	tls  *tls.Config
}

// call makes one RPC over a fresh connection, as a stranger with no
// session to reuse would.
func (o outsider) call(method string, args, reply any) error {
	p := pool.NewPool(pool.Config{TLS: o.tls, DialTimeout: 5 * time.Second, CallTimeout: 5 * time.Second})
	defer p.Shutdown()
	return p.RPC(o.addr, method, args, reply, 0)
}

// register registers node, presenting token (an introduction token) if
// any.
func (o outsider) register(node *structs.Node, token string) error {
	var resp structs.NodeUpdateResponse
	return o.call("Node.Register", &structs.NodeRegisterRequest{Node: node, WriteRequest: structs.WriteRequest{AuthToken: token}}, &resp)
}

// heartbeat sends Node.UpdateStatus for nodeID with secret as the
// credential.
func (o outsider) heartbeat(nodeID, secret string) error {
	var resp structs.NodeUpdateResponse
	return o.call("Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: nodeID, Status: structs.NodeStatusReady,
		WriteRequest: structs.WriteRequest{AuthToken: secret}}, &resp)
}

// raftClosed opens a raft connection (first byte pool.RPCRaft) and
// reports whether the server hung up on it rather than kept it for raft.
func (o outsider) raftClosed(t *testing.T) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pool.Dial(ctx, pool.DialInput{Addr: o.addr, TLS: o.tls, Kind: pool.RPCRaft})
	if err != nil {
		return true
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(3 * time.Second))
	_, err = conn.Read(make([]byte, 1))
	return err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
}

// serverOnlyCall is one of the RPCs security.md reserves to servers in
// every mode, its args carrying token as the caller's credential.
type serverOnlyCall struct {
	method string
	args   func(token string) any
	reply  func() any
}

// serverOnlyCalls are every RPC of that row of "What the servers check".
func serverOnlyCalls() []serverOnlyCall {
	w := func(token string) structs.WriteRequest { return structs.WriteRequest{AuthToken: token} }
	q := func(token string) structs.QueryOptions { return structs.QueryOptions{AuthToken: token} }
	generic := func() any { return &structs.GenericResponse{} }
	ev := &structs.Evaluation{ID: "8e1e7d4c-0000-4000-8000-000000000001", Namespace: "default", JobID: "x", Status: structs.EvalStatusPending}
	evals := func(t string) any {
		return &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{ev}, WriteRequest: w(t)}
	}
	ack := func(t string) any { return &structs.EvalAckRequest{EvalID: ev.ID, Token: "y", WriteRequest: w(t)} }
	return []serverOnlyCall{
		{"Eval.Dequeue", func(t string) any {
			return &structs.EvalDequeueRequest{Schedulers: []string{structs.JobTypeService, structs.JobTypeBatch}, Timeout: 10 * time.Millisecond, WriteRequest: w(t)}
		}, func() any { return &structs.EvalDequeueResponse{} }},
		{"Eval.Ack", ack, generic},
		{"Eval.Nack", ack, generic},
		{"Eval.Update", evals, generic},
		{"Eval.Create", evals, generic},
		{"Eval.Reblock", evals, generic},
		{"Plan.Submit", func(t string) any {
			return &structs.PlanRequest{Plan: &structs.Plan{EvalID: ev.ID}, WriteRequest: w(t)}
		}, func() any { return &structs.PlanResponse{} }},
		{"Keyring.Get", func(t string) any {
			return &structs.KeyringGetRootKeyRequest{KeyID: "k", QueryOptions: q(t)}
		}, func() any { return &structs.KeyringGetRootKeyResponse{} }},
		{"Status.HasNodeConn", func(t string) any {
			return &structs.NodeConnRequest{NodeID: "8e1e7d4c-0000-4000-8000-000000000002", QueryOptions: q(t)}
		}, func() any { return &structs.NodeConnResponse{} }},
	}
}

// probeServerOnly checks that every server-only RPC, called by o with
// token, is refused with security.md's text: "Permission denied: only
// servers may call this RPC: <method> " followed by want.
func probeServerOnly(t *testing.T, o outsider, token, want string) {
	t.Helper()
	for _, c := range serverOnlyCalls() {
		err := o.call(c.method, c.args(token), c.reply())
		must.ErrorIs(t, err, structs.ErrPermissionDenied, must.Sprint(c.method))
		must.EqError(t, err, "Permission denied: only servers may call this RPC: "+c.method+" "+want)
	}
}

// probePoseAsNode checks that a caller without the secret of node (an
// existing node) can neither heartbeat for it nor re-register it:
// "Permission denied: missing node secret ID: node <id>" without one,
// "... node secret ID does not match: node <id>" with a wrong one.
func probePoseAsNode(t *testing.T, o outsider, nodeID string) {
	t.Helper()
	must.EqError(t, o.heartbeat(nodeID, ""), "Permission denied: missing node secret ID: node "+nodeID)
	mismatch := "Permission denied: node secret ID does not match: node " + nodeID
	must.EqError(t, o.heartbeat(nodeID, "8e1e7d4c-0000-4000-8000-0000000000ff"), mismatch)
	impostor := mock.Node()
	impostor.ID = nodeID
	impostor.Name = "client"
	must.EqError(t, o.register(impostor, ""), mismatch)
}

// newNode is a node the servers have never seen, named name.
func newNode(name string) *structs.Node {
	n := mock.Node()
	n.Name = name
	return n
}

// relay is a TCP relay in front of a server's RPC port that keeps what
// flows from its callers to the server: what anyone on the link sees.
type relay struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	seen  bytes.Buffer
	conns []net.Conn
}

func startRelay(t *testing.T, target string) *relay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must.NoError(t, err)
	r := &relay{ln: ln, target: target}
	go r.serve()
	t.Cleanup(func() {
		ln.Close()
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, c := range r.conns {
			c.Close()
		}
	})
	return r
}

func (r *relay) addr() string { return r.ln.Addr().String() }

func (r *relay) serve() {
	for {
		in, err := r.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.DialTimeout("tcp", r.target, 5*time.Second)
		if err != nil {
			in.Close()
			continue
		}
		r.mu.Lock()
		r.conns = append(r.conns, in, out)
		r.mu.Unlock()
		go func() { _, _ = io.Copy(out, io.TeeReader(in, (*seenWriter)(r))); out.Close() }()
		go func() { _, _ = io.Copy(in, out); in.Close() }()
	}
}

// captured is every byte callers sent through the relay so far.
func (r *relay) captured() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Clone(r.seen.Bytes())
}

type seenWriter relay

func (w *seenWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen.Write(p)
}

// msgpackString reads the msgpack string that starts b (fixstr, str8,
// str16: what go-msgpack writes for a short string), or "" if none does.
func msgpackString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	var n, h int
	switch c := b[0]; {
	case c >= 0xa0 && c <= 0xbf:
		n, h = int(c&0x1f), 1
	case c == 0xd9 && len(b) > 1:
		n, h = int(b[1]), 2
	case c == 0xda && len(b) > 2:
		n, h = int(b[1])<<8|int(b[2]), 3
	default:
		return ""
	}
	if len(b) < h+n {
		return ""
	}
	return string(b[h : h+n])
}

// sniffSecret is the first non-empty node secret in msgpack bytes: the
// value of a "SecretID" key.
func sniffSecret(b []byte) string {
	key := append([]byte{0xa0 | byte(len("SecretID"))}, "SecretID"...)
	for i := bytes.Index(b, key); i >= 0; {
		if s := msgpackString(b[i+len(key):]); s != "" {
			return s
		}
		next := bytes.Index(b[i+1:], key)
		if next < 0 {
			break
		}
		i += 1 + next
	}
	return ""
}

// httpCall makes one HTTP request with token (none when "") and returns
// the status and body.
func httpCall(t *testing.T, method, url, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	must.NoError(t, err)
	if token != "" {
		req.Header.Set("X-Nomad-Token", token)
	}
	resp, err := httpClient.Do(req)
	must.NoError(t, err, must.Sprintf("%s %s", method, url))
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// httpClient is shared: a client per call would leave idle keep-alive
// connections counted against the per-IP limit.
var httpClient = &http.Client{Timeout: 10 * time.Second}

// nomadIn runs the CLI in dir (the tls commands write there).
func nomadIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command(harness.Bin(), args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	must.NoError(t, err, must.Sprintf("nomad %v: %s", args, out))
}

// pki is a CA made with `nomad tls ca create` and its server and client
// certificates made with `nomad tls cert create`, in dir.
type pki struct{ dir string }

func newPKI(t *testing.T, dir string) pki {
	t.Helper()
	must.NoError(t, os.MkdirAll(dir, 0o755))
	nomadIn(t, dir, "tls", "ca", "create")
	nomadIn(t, dir, "tls", "cert", "create", "-server")
	nomadIn(t, dir, "tls", "cert", "create", "-client")
	return pki{dir: dir}
}

func (p pki) file(name string) string { return filepath.Join(p.dir, name) }

// agentTLS is the tls block of an agent holding role's certificate.
func (p pki) agentTLS(role string) string {
	return fmt.Sprintf(`
tls {
  rpc                    = true
  ca_file                = %q
  cert_file              = %q
  key_file               = %q
  verify_server_hostname = true
}
`, p.file("nomad-agent-ca.pem"), p.file("global-"+role+"-nomad.pem"), p.file("global-"+role+"-nomad-key.pem"))
}

// dialer is the TLS config of a caller holding role's certificate ("" for
// none) that trusts this CA.
func (p pki) dialer(t *testing.T, role string) *tls.Config {
	t.Helper()
	c := &tlsutil.Config{EnableRPC: true, CAFile: p.file("nomad-agent-ca.pem"), Region: "global", VerifyServerHostname: true,
		CertFile: p.file("global-client-nomad.pem"), KeyFile: p.file("global-client-nomad-key.pem")}
	if role != "" {
		c.CertFile, c.KeyFile = p.file("global-"+role+"-nomad.pem"), p.file("global-"+role+"-nomad-key.pem")
	}
	cfg, err := c.OutgoingRPC()
	must.NoError(t, err)
	if role == "" {
		cfg.Certificates = nil
	}
	return cfg
}
