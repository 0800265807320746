// Package upstream runs the real upstream Nomad v1.6.5 agent (unmodified,
// from ../shared/tools) against our binary: an upstream client on our
// servers registers, runs a raw_exec allocation and reports it,
// heartbeats, and goes disconnected and back by the disconnected-clients
// rules, its task untouched. Each test skips, with a message, when the
// upstream binary is absent.
package upstream

import (
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/e2e/internal/harness"
	"github.com/nomad-edge/nomad/helper/tlsutil"
	"github.com/nomad-edge/nomad/testutil/wait"
)

func TestMain(m *testing.M) { harness.Main(m) }

// upstreamGz is the reference binary, relative to this package.
const upstreamGz = "../../../shared/tools/nomad-1.6.5.gz"

// upstreamCluster is one of our servers and one upstream client on it.
type upstreamCluster struct {
	t      *testing.T
	agents *harness.Agents
	server *harness.Agent
	client *harness.Agent
}

// startUpstreamCluster starts our server (short heartbeat TTL and grace, so
// a missed heartbeat shows in seconds) and an upstream 1.6.5 client agent
// pointed at its RPC port, and waits for the node to be ready. extra is
// more HCL for each: the server's, then the client's.
func startUpstreamCluster(t *testing.T, extra ...string) *upstreamCluster {
	t.Helper()
	upstreamBin := harness.UnpackTool(t, upstreamGz, t.TempDir())
	extra = append(extra, "", "")
	ags := harness.NewAgents(t)
	sp := harness.FreePorts(t)
	server := ags.Add(harness.AgentConfig{
		Name:  "server",
		Ports: sp,
		Config: agentHead(harness.DataDirVar, "", sp, false) + `server {
  enabled           = true
  bootstrap_expect  = 1
  heartbeat_grace   = "2s"
  min_heartbeat_ttl = "2s"
}
` + extra[0],
	})
	server.Start()
	cp := harness.FreePorts(t)
	client := ags.Add(harness.AgentConfig{
		Name:  "upstream-client",
		Bin:   upstreamBin,
		Ports: cp,
		Config: upstreamClientConfig("upstream-1", harness.DataDirVar, cp, []string{strconv.Quote(server.RPCAddr())}) + `
# The mock driver turns itself off after 8s: a driver health event the
# client reports with Node.EmitEvents.
plugin "mock_driver" {
  config {
    shutdown_periodic_after    = true
    shutdown_periodic_duration = 8000000000
  }
}
` + extra[1],
	})
	wait.Poll(t, 30*time.Second, "our server has a leader", func() (bool, string) {
		server.MustNotHaveDied()
		l := server.Leader()
		return l != "", "leader " + l
	})
	client.Start()
	c := &upstreamCluster{t: t, agents: ags, server: server, client: client}
	c.waitNode("ready")
	return c
}

// node is the one node, as our server's API shows it.
func (c *upstreamCluster) node() (*nomadapi.NodeListStub, error) {
	nodes, _, err := c.server.API().Nodes().List(nil)
	if err != nil {
		return nil, err
	}
	if len(nodes) != 1 {
		return nil, fmt.Errorf("%d nodes", len(nodes))
	}
	return nodes[0], nil
}

func (c *upstreamCluster) waitNode(status string) *nomadapi.NodeListStub {
	c.t.Helper()
	var n *nomadapi.NodeListStub
	wait.Poll(c.t, 60*time.Second, "the upstream node "+status, func() (bool, string) {
		c.server.MustNotHaveDied()
		var err error
		if n, err = c.node(); err != nil {
			return false, err.Error()
		}
		return n.Status == status, fmt.Sprintf("node %s status %s", n.Name, n.Status)
	})
	return n
}

// waitAlloc waits for the job's one allocation to have clientStatus, its
// task running with a live process when running, and returns it.
func (c *upstreamCluster) waitAlloc(jobID, clientStatus string) *nomadapi.Allocation {
	c.t.Helper()
	var got *nomadapi.Allocation
	wait.Poll(c.t, 60*time.Second, fmt.Sprintf("the allocation of %s %s", jobID, clientStatus), func() (bool, string) {
		c.server.MustNotHaveDied()
		stubs, _, err := c.server.API().Jobs().Allocations(jobID, true, nil)
		if err != nil {
			return false, err.Error()
		}
		if len(stubs) != 1 {
			return false, fmt.Sprintf("%d allocations", len(stubs))
		}
		a, _, err := c.server.API().Allocations().Info(stubs[0].ID, nil)
		if err != nil {
			return false, err.Error()
		}
		got = a
		return a.ClientStatus == clientStatus, fmt.Sprintf("alloc %s client status %s desired %s", a.ID[:8], a.ClientStatus, a.DesiredStatus)
	})
	return got
}

// sleepJob is a raw_exec job of one task that says "started" and sleeps,
// and may stay disconnected for two minutes.
func sleepJob(id string) *nomadapi.Job {
	job := nomadapi.NewServiceJob(id, id, "global", 50)
	job.Datacenters = []string{"dc1"}
	tg := nomadapi.NewTaskGroup("sleep", 1)
	window := 2 * time.Minute
	tg.Disconnect = &nomadapi.DisconnectStrategy{LostAfter: &window}
	task := nomadapi.NewTask("sleep", "raw_exec")
	task.SetConfig("command", "/bin/sh")
	task.SetConfig("args", []string{"-c", "echo started; exec /bin/sleep 3600"})
	cpu, mem := 50, 32
	task.Require(&nomadapi.Resources{CPU: &cpu, MemoryMB: &mem})
	tg.AddTask(task)
	job.AddTaskGroup(tg)
	return job
}

// httpGet returns the body and status of a GET.
func httpGet(t *testing.T, url string) (string, int) {
	t.Helper()
	resp, err := http.Get(url)
	must.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must.NoError(t, err)
	return string(b), resp.StatusCode
}

// taskPID is the one process of the allocation's task.
func taskPID(t *testing.T, allocID string) int {
	t.Helper()
	return taskPIDs(t, allocID, 1)[0]
}

// taskPIDs waits for the allocation's tasks to have n processes and
// returns them.
func taskPIDs(t *testing.T, allocID string, n int) []int {
	t.Helper()
	var pids []int
	wait.Poll(t, 20*time.Second, fmt.Sprintf("%d task processes of %s", n, allocID[:8]), func() (bool, string) {
		pids = harness.AllocPIDs(allocID)
		return len(pids) == n, fmt.Sprintf("pids %v", pids)
	})
	return pids
}

// TestUpstreamClientRunsOnOurServers checks that an upstream v1.6.5 client
// agent registers with our server (as 1.6.5, so the version gate sees its
// real version), runs an allocation we place and reports it running,
// serves its logs and files through our server (a route it cannot serve,
// checks, is refused by name), reports a driver's health event into the
// node's history, keeps its node ready by heartbeating, and, frozen past its TTL, is
// marked disconnected with its allocation unknown, then on resuming comes
// back ready with the same allocation and the same task process: the
// upgrade path (operations/upgrading.md) rests on exactly this.
func TestUpstreamClientRunsOnOurServers(t *testing.T) {
	c := startUpstreamCluster(t)
	n, _, err := c.server.API().Nodes().Info(c.waitNode("ready").ID, nil)
	must.NoError(t, err)
	must.Eq(t, "1.6.5", n.Attributes["nomad.version"])
	must.Eq(t, "true", n.Attributes["nomad.upstream"], must.Sprint("judged by upstream's numbering"))
	must.True(t, n.Drivers["raw_exec"] != nil && n.Drivers["raw_exec"].Healthy, must.Sprintf("drivers %v", n.Drivers))

	_, _, err = c.server.API().Jobs().Register(sleepJob("sleep"), nil)
	must.NoError(t, err)
	alloc := c.waitAlloc("sleep", "running")
	must.Eq(t, "running", alloc.TaskStates["sleep"].State)
	pid := taskPID(t, alloc.ID)

	// Logs and files come through our server, over the connection the
	// upstream client opened (its HTTP port is not asked).
	base := c.server.HTTPAddr() + "/v1/client/"
	wait.Poll(t, 20*time.Second, "the task's stdout through our server", func() (bool, string) {
		body, code := httpGet(t, base+"fs/logs/"+alloc.ID+"?task=sleep&type=stdout&plain=true")
		return code == http.StatusOK && body == "started\n", fmt.Sprintf("%d %q", code, body)
	})
	var files []struct{ Name string }
	must.NoError(t, c.server.GetJSON("/v1/client/fs/ls/"+alloc.ID+"?path=alloc/logs", &files))
	must.SliceContainsFunc(t, files, "sleep.stdout.0", func(f struct{ Name string }, name string) bool { return f.Name == name })
	body, code := httpGet(t, base+"fs/cat/"+alloc.ID+"?path=alloc/logs/sleep.stdout.0")
	must.Eq(t, http.StatusOK, code)
	must.Eq(t, "started\n", body)
	body, code = httpGet(t, base+"allocation/"+alloc.ID+"/checks")
	must.Eq(t, http.StatusNotImplemented, code, must.Sprintf("body %q", body))

	// Heartbeats: the TTL is about 2s and the grace 2s; ready for three
	// times that means the client's Node.UpdateStatus calls are taken.
	harness.Hold(t, 12*time.Second, "the upstream node stays ready while it heartbeats", func() error {
		n, err := c.node()
		if err != nil {
			return err
		}
		if n.Status != "ready" {
			return fmt.Errorf("node is %s", n.Status)
		}
		return nil
	})

	// The driver health event the client reported is in the node's history.
	wait.Poll(t, 30*time.Second, "the mock driver's event in the node's history", func() (bool, string) {
		n, _, err := c.server.API().Nodes().Info(alloc.NodeID, nil)
		if err != nil {
			return false, err.Error()
		}
		for _, e := range n.Events {
			if e.Subsystem == "Driver" && e.Details["driver"] == "mock_driver" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("events %d", len(n.Events))
	})

	// A client that stops answering (frozen, as one whose link went
	// silent) is disconnected and its allocation unknown, not lost: the
	// job allows two minutes away.
	c.client.Signal(syscall.SIGSTOP)
	c.waitNode("disconnected")
	unknown := c.waitAlloc("sleep", "unknown")
	must.Eq(t, alloc.ID, unknown.ID)
	must.True(t, harness.Alive(pid), must.Sprint("the task process lives on while its client is away"))

	c.client.Signal(syscall.SIGCONT)
	c.waitNode("ready")
	back := c.waitAlloc("sleep", "running")
	must.Eq(t, alloc.ID, back.ID)
	must.Eq(t, uint64(0), back.TaskStates["sleep"].Restarts)
	must.Eq(t, []int{pid}, harness.AllocPIDs(alloc.ID))
	stubs, _, err := c.server.API().Jobs().Allocations("sleep", true, nil)
	must.NoError(t, err)
	must.Len(t, 1, stubs, must.Sprint("no replacement was placed"))
}

// tlsBlock writes a CA and a certificate for role ("server" or "client")
// of region global into dir, as `nomad tls cert create` would, and
// returns the agent's tls block using them.
func tlsBlock(t *testing.T, dir string, ca, caKey []byte, role string) string {
	t.Helper()
	name := role + ".global.nomad"
	cert, key, err := tlsutil.GenerateCert(tlsutil.CertInput{
		CA: ca, CAKey: caKey, CommonName: name,
		DNSNames:    []string{name, "localhost"},
		IPs:         []net.IP{net.ParseIP("127.0.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	})
	must.NoError(t, err)
	files := map[string][]byte{"ca.pem": ca, role + ".pem": cert, role + "-key.pem": key}
	for f, b := range files {
		must.NoError(t, os.WriteFile(filepath.Join(dir, f), b, 0o600))
	}
	return harness.TLSBlock(filepath.Join(dir, "ca.pem"), filepath.Join(dir, role+".pem"), filepath.Join(dir, role+"-key.pem"))
}

// TestUpstreamClientOverMutualTLS checks that an upstream 1.6.5 client
// with mTLS on (its own TLS connection byte, then the handshake) reaches
// our server with tls.rpc on, is verified by the same CA, registers and
// runs an allocation: a cluster upgraded in place keeps its certificates.
func TestUpstreamClientOverMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca, caKey, err := tlsutil.GenerateCA(tlsutil.CAInput{})
	must.NoError(t, err)
	c := startUpstreamCluster(t, tlsBlock(t, dir, ca, caKey, "server"), tlsBlock(t, dir, ca, caKey, "client"))
	_, _, err = c.server.API().Jobs().Register(sleepJob("sleep"), nil)
	must.NoError(t, err)
	alloc := c.waitAlloc("sleep", "running")
	must.Eq(t, "running", alloc.TaskStates["sleep"].State)
}
