package security

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/e2e/internal/harness"
	"github.com/nomad-edge/nomad/helper/pool"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// An outsider facing an agent at its defaults (no tls, no ACLs,
// client_introduction "warn") reads RPC traffic on the link, calls the
// HTTP API and registers a new node (logged), but cannot take the
// servers' work or keys, speak raft, pose as an existing node, submit a
// job past job_max_count, or lock the host's own health checks out with a
// connection flood: security.md's first row, each cell a subtest.
func TestOutsider_Defaults(t *testing.T) {
	t.Parallel()
	ags := harness.NewAgents(t)
	srv := startServer(t, ags, "", "")
	link := startRelay(t, srv.RPCAddr())
	nodeID := startClient(t, ags, srv, link.addr(), "")
	o := outsider{addr: srv.RPCAddr()}

	// What a client agent sends its server crosses the link as msgpack
	// anyone can read, its node secret included; the secret read off the
	// wire is enough to heartbeat as that node.
	t.Run("ReadsRPCTraffic", func(t *testing.T) {
		seen := link.captured()
		must.Eq(t, pool.RPCMultiplex, seen[0], must.Sprint("a plaintext multiplexed connection"))
		must.True(t, bytes.Contains(seen, []byte("Node.Register")), must.Sprint("the method name in the clear"))
		must.True(t, bytes.Contains(seen, []byte(nodeID)), must.Sprint("the node ID in the clear"))
		secret := sniffSecret(seen)
		must.Eq(t, 36, len(secret), must.Sprintf("a node secret read off the wire: %q", secret))
		must.NoError(t, o.heartbeat(nodeID, secret), must.Sprint("the sniffed secret is the node's"))
	})

	t.Run("CallsHTTPAPI", func(t *testing.T) {
		for _, path := range []string{"/v1/jobs", "/v1/nodes", "/v1/vars"} {
			code, body := httpCall(t, "GET", srv.HTTPAddr()+path, "", "")
			must.Eq(t, http.StatusOK, code, must.Sprintf("GET %s: %s", path, body))
		}
		code, body := httpCall(t, "PUT", srv.HTTPAddr()+"/v1/var/outsider", "", `{"Items":{"k":"v"}}`)
		must.Eq(t, http.StatusOK, code, must.Sprint(body))
		code, body = httpCall(t, "GET", srv.HTTPAddr()+"/v1/var/outsider", "", "")
		must.Eq(t, http.StatusOK, code, must.Sprint(body))
		must.StrContains(t, body, `"k":"v"`)
	})

	t.Run("RegistersNewNodeLogged", func(t *testing.T) {
		n := newNode("outsider-1")
		must.NoError(t, o.register(n, ""))
		wait.Poll(t, 5*time.Second, "the server's warning naming the node", func() (bool, string) {
			log := srv.Log()
			return strings.Contains(log, "registering a new node without a valid introduction token") && strings.Contains(log, n.ID), "not logged yet"
		})
	})

	t.Run("PoseAsExistingNodeRefused", func(t *testing.T) { probePoseAsNode(t, o, nodeID) })

	t.Run("ServerOnlyRPCsRefused", func(t *testing.T) {
		probeServerOnly(t, o, "", "needs the servers' identity, which this caller did not prove")
	})

	t.Run("RaftClosed", func(t *testing.T) {
		must.True(t, o.raftClosed(t), must.Sprint("a raft connection from an outsider kept open"))
	})

	t.Run("JobPastJobMaxCountRefused", func(t *testing.T) {
		code, body := httpCall(t, "PUT", srv.HTTPAddr()+"/v1/jobs", "", bigJob(t, "too-big", 6, structs.MaxGroupCount))
		must.Eq(t, http.StatusBadRequest, code, must.Sprint(body))
		must.StrContains(t, body, "Job asks for 60000 instances (the sum of its task groups' count), more than the maximum of 50000 per job (server job_max_count)")
		code, body = httpCall(t, "GET", srv.HTTPAddr()+"/v1/job/too-big", "", "")
		must.Eq(t, http.StatusNotFound, code, must.Sprint("nothing stored: ", body))
	})

	t.Run("FloodSparesOwnAddress", func(t *testing.T) { probeFlood(t, srv) })
}

// bigJob is a job of groups groups of count sleeping raw_exec tasks, as
// the HTTP API's register body.
func bigJob(t *testing.T, id string, groups, count int) string {
	t.Helper()
	type task struct {
		Name, Driver string
		Config       map[string]any
	}
	type group struct {
		Name  string
		Count int
		Tasks []task
	}
	job := struct {
		ID, Name, Type string
		Datacenters    []string
		TaskGroups     []group
	}{ID: id, Name: id, Type: "service", Datacenters: []string{"dc1"}}
	for i := range groups {
		job.TaskGroups = append(job.TaskGroups, group{Name: fmt.Sprintf("g%d", i), Count: count,
			Tasks: []task{{Name: "t", Driver: "raw_exec", Config: map[string]any{"command": "/bin/sleep", "args": []string{"60"}}}}})
	}
	b, err := json.Marshal(map[string]any{"Job": job})
	must.NoError(t, err)
	return string(b)
}

// dialFrom opens a TCP connection to addr from the local IP src, so one
// test can be a stranger on 127.0.0.2 and the operator on 127.0.0.1.
func dialFrom(src, addr string) (net.Conn, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	return d.Dial("tcp", addr)
}

// closedAtOnce reports whether the server closes c within 2 s, returning
// what it wrote first (an HTTP 429, for one).
func closedAtOnce(c net.Conn) (bool, string) {
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	b, err := io.ReadAll(c)
	return !errors.Is(err, os.ErrDeadlineExceeded), string(b)
}

// probeFlood holds the default limit (100) of RPC and of HTTP connections
// from 127.0.0.2, a stranger on the host's loopback: the next one from it
// is closed at once (HTTP with a 429). Then, with as many connections held
// from 127.0.0.1, the agent's own address, the operator's checks from
// there still answer: Status.Ping over RPC and GET /v1/agent/health.
func probeFlood(t *testing.T, srv *harness.Agent) {
	const limit = 100 // limits.{http,rpc}_max_conns_per_client's default
	probe, err := dialFrom("127.0.0.2", srv.RPCAddr())
	if err != nil {
		t.Skipf("the flood probe dials from the loopback alias 127.0.0.2, which this host does not allow: %v", err)
	}
	probe.Close()
	var fds syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &fds); err == nil && fds.Cur < 1024 {
		t.Skipf("the flood probe holds about 450 connections; the open-file limit is %d", fds.Cur)
	}
	hold := func(src, addr string, n int, first []byte) {
		for range n {
			c, err := dialFrom(src, addr)
			must.NoError(t, err)
			t.Cleanup(func() { c.Close() })
			if first != nil {
				// A connection that says what it is escapes the 5 s
				// handshake deadline: it is held, not timed out.
				_, err = c.Write(first)
				must.NoError(t, err)
			}
		}
	}
	httpAddr := strings.TrimPrefix(srv.HTTPAddr(), "http://")
	hold("127.0.0.2", srv.RPCAddr(), limit, []byte{pool.RPCMultiplex})
	hold("127.0.0.2", httpAddr, limit, nil)

	// The server counts a connection when it accepts it, so the held
	// ones are counted before the next is looked at.
	over, err := dialFrom("127.0.0.2", srv.RPCAddr())
	must.NoError(t, err)
	closed, _ := closedAtOnce(over)
	must.True(t, closed, must.Sprint("RPC connection 101 from 127.0.0.2 kept open"))
	over, err = dialFrom("127.0.0.2", httpAddr)
	must.NoError(t, err)
	closed, answer := closedAtOnce(over)
	must.True(t, closed, must.Sprint("HTTP connection 101 from 127.0.0.2 kept open"))
	must.StrHasPrefix(t, "HTTP/1.1 429 Too Many Requests", answer)
	must.StrContains(t, srv.Log(), "refusing connections over the per-client limit")

	hold("127.0.0.1", srv.RPCAddr(), limit+10, []byte{pool.RPCMultiplex})
	hold("127.0.0.1", httpAddr, limit+10, nil)
	p := pool.NewPool(pool.Config{Dialer: &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.1")}}, DialTimeout: 5 * time.Second, CallTimeout: 5 * time.Second})
	defer p.Shutdown()
	var reply struct{}
	must.NoError(t, p.RPC(srv.RPCAddr(), "Status.Ping", &structs.GenericRequest{}, &reply, 0), must.Sprint("the operator's RPC check from the host"))
	code, body := httpCall(t, "GET", srv.HTTPAddr()+"/v1/agent/health", "", "")
	must.Eq(t, http.StatusOK, code, must.Sprint("the operator's health check from the host: ", body))
}
