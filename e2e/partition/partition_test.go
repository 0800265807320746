// Package partition cuts a client off the network for real: the client
// agent runs in its own network namespace, joined to the server by a veth
// pair, and the test takes the link down and up again. It needs root and
// iproute2; elsewhere it skips and says why.
package partition

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

var nomadBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "nomad-partition-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	nomadBin = filepath.Join(dir, "nomad")
	build := exec.Command("go", "build", "-o", nomadBin, "../..")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building nomad:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// netns is a network namespace with a veth link to the host.
type netns struct {
	name, hostIf, hostIP, nsIP string
}

func sh(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// newNetns creates the namespace and link, or skips the test when this
// machine cannot.
func newNetns(t *testing.T) *netns {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("partition tests need root to create network namespaces")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("partition tests need iproute2's ip command")
	}
	id := os.Getpid() % 200
	n := &netns{
		name:   fmt.Sprintf("nomad-e2e-%d", os.Getpid()),
		hostIf: fmt.Sprintf("ne2e%dh", id),
		hostIP: fmt.Sprintf("10.213.%d.1", id),
		nsIP:   fmt.Sprintf("10.213.%d.2", id),
	}
	nsIf := fmt.Sprintf("ne2e%dn", id)
	if out, err := exec.Command("ip", "netns", "add", n.name).CombinedOutput(); err != nil {
		t.Skipf("cannot create a network namespace here: %v: %s", err, out)
	}
	t.Cleanup(func() {
		_ = exec.Command("ip", "link", "del", n.hostIf).Run()
		_ = exec.Command("ip", "netns", "del", n.name).Run()
	})
	sh(t, "ip", "link", "add", n.hostIf, "type", "veth", "peer", "name", nsIf)
	sh(t, "ip", "link", "set", nsIf, "netns", n.name)
	sh(t, "ip", "addr", "add", n.hostIP+"/24", "dev", n.hostIf)
	sh(t, "ip", "link", "set", n.hostIf, "up")
	sh(t, "ip", "netns", "exec", n.name, "ip", "addr", "add", n.nsIP+"/24", "dev", nsIf)
	sh(t, "ip", "netns", "exec", n.name, "ip", "link", "set", nsIf, "up")
	sh(t, "ip", "netns", "exec", n.name, "ip", "link", "set", "lo", "up")
	return n
}

// agent is a nomad agent process.
type agent struct {
	cmd *exec.Cmd
	log *bytes.Buffer
}

func startAgent(t *testing.T, netnsName string, args ...string) *agent {
	t.Helper()
	argv := append([]string{nomadBin, "agent"}, args...)
	if netnsName != "" {
		argv = append([]string{"ip", "netns", "exec", netnsName}, argv...)
	}
	a := &agent{cmd: exec.Command(argv[0], argv[1:]...), log: &bytes.Buffer{}}
	a.cmd.Stdout, a.cmd.Stderr = a.log, a.log
	must.NoError(t, a.cmd.Start())
	t.Cleanup(func() {
		_ = a.cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = a.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = a.cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("agent %v log:\n%s", args, a.log.String())
		}
	})
	return a
}

func getJSON(url string, out any) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

func pollUntil(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var seen string
	for time.Now().Before(deadline) {
		ok, s := cond()
		if ok {
			return
		}
		seen = s
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: not within %v; last saw: %s", what, timeout, seen)
}

type nodeStub struct{ ID, Name, Status string }

type allocStub struct {
	ID, NodeID, ClientStatus, DesiredStatus string
	TaskStates                              map[string]struct {
		Restarts  uint64
		StartedAt time.Time
	}
}

// The mission on a real network: a client in its own namespace runs a task
// of a group with a disconnect window; its link goes down, so the servers
// see its node disconnected and the allocation unknown (not lost); the
// link comes back, and the allocation is running again without its task
// having restarted.
func TestPartition_ClientReturnsWithoutRestart(t *testing.T) {
	n := newNetns(t)
	dir := t.TempDir()
	serverCfg := filepath.Join(dir, "server.hcl")
	must.NoError(t, os.WriteFile(serverCfg, []byte(`
ports {
  http = 24646
  rpc  = 24647
}
server {
  min_heartbeat_ttl = "1s"
  heartbeat_grace   = "1s"
}
`), 0o644))
	startAgent(t, "", "-dev", "-bind", n.hostIP, "-config", serverCfg, "-data-dir", filepath.Join(dir, "server"))
	api := fmt.Sprintf("http://%s:24646", n.hostIP)
	pollUntil(t, 30*time.Second, "server up", func() (bool, string) {
		var nodes []nodeStub
		err := getJSON(api+"/v1/nodes", &nodes)
		return err == nil, fmt.Sprint(err)
	})

	startAgent(t, n.name, "-client", "-servers", n.hostIP+":24647", "-bind", n.nsIP,
		"-node", "edge-ns", "-data-dir", filepath.Join(dir, "client"))
	var edge nodeStub
	pollUntil(t, 30*time.Second, "edge node ready", func() (bool, string) {
		var nodes []nodeStub
		if err := getJSON(api+"/v1/nodes", &nodes); err != nil {
			return false, err.Error()
		}
		for _, nd := range nodes {
			if nd.Name == "edge-ns" && nd.Status == "ready" {
				edge = nd
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", nodes)
	})

	job := filepath.Join(dir, "edge.nomad.hcl")
	must.NoError(t, os.WriteFile(job, []byte(`
job "edge" {
  datacenters = ["dc1"]
  constraint {
    attribute = "${node.unique.name}"
    value     = "edge-ns"
  }
  group "app" {
    max_client_disconnect = "1h"
    task "app" {
      driver = "mock_driver"
      config {
        run_for = "1h"
      }
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
`), 0o644))
	out, err := exec.Command(nomadBin, "job", "run", "-address", api, job).CombinedOutput()
	must.NoError(t, err, must.Sprint(string(out)))

	var original allocStub
	allocs := func() []allocStub {
		var list []allocStub
		_ = getJSON(api+"/v1/job/edge/allocations", &list)
		return list
	}
	pollUntil(t, 30*time.Second, "allocation running on the edge node", func() (bool, string) {
		list := allocs()
		if len(list) == 1 && list[0].ClientStatus == "running" && list[0].NodeID == edge.ID {
			original = list[0]
			return true, ""
		}
		return false, fmt.Sprintf("%+v", list)
	})
	startedAt := original.TaskStates["app"].StartedAt

	sh(t, "ip", "link", "set", n.hostIf, "down")
	pollUntil(t, 30*time.Second, "node disconnected, allocation unknown", func() (bool, string) {
		var nd nodeStub
		_ = getJSON(api+"/v1/node/"+edge.ID, &nd)
		list := allocs()
		return nd.Status == "disconnected" && len(list) == 1 && list[0].ClientStatus == "unknown" && list[0].DesiredStatus == "run",
			fmt.Sprintf("node %s; %+v", nd.Status, list)
	})

	sh(t, "ip", "link", "set", n.hostIf, "up")
	pollUntil(t, 90*time.Second, "node ready, allocation running again", func() (bool, string) {
		var nd nodeStub
		_ = getJSON(api+"/v1/node/"+edge.ID, &nd)
		list := allocs()
		return nd.Status == "ready" && len(list) == 1 && list[0].ClientStatus == "running",
			fmt.Sprintf("node %s; %+v", nd.Status, list)
	})
	final := allocs()[0]
	must.Eq(t, original.ID, final.ID)
	must.Eq(t, uint64(0), final.TaskStates["app"].Restarts, must.Sprint("the task was not restarted"))
	must.Eq(t, startedAt, final.TaskStates["app"].StartedAt)
}
