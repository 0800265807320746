package devagent

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/allocnet"
	"github.com/nomad-edge/nomad/client/allocnet/allocnettest"
	"github.com/nomad-edge/nomad/e2e/internal/harness"
	"github.com/nomad-edge/nomad/helper/netns"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// bridgeAgentConfig is serverClientConfig with the test's own bridge and
// subnet, the node's address on the default route's interface (so that
// another allocation can reach the host's ports) and raw_exec enabled.
func bridgeAgentConfig(p harness.Ports, b allocnet.BridgeConfig, iface string) string {
	cfg := strings.Replace(serverClientConfig(p), "client {\n  enabled = true\n}\n", "", 1)
	return cfg + fmt.Sprintf(`
client {
  enabled               = true
  network_interface     = %q
  bridge_network_name   = %q
  bridge_network_subnet = %q
}
plugin "raw_exec" {
  config {
    enabled = true
  }
}
`, iface, b.Name, b.Subnet)
}

type bridgeAlloc struct {
	ClientStatus       string
	AllocatedResources struct {
		Shared struct {
			Ports []struct {
				Label  string
				Value  int
				To     int
				HostIP string
			}
		}
	}
	TaskStates map[string]struct {
		State  string
		Events []struct{ Type, DisplayMessage string }
	}
}

// runBridgeJob registers the job file text and returns its allocation
// once running.
func runBridgeJob(t *testing.T, a *harness.Agent, dir, name, text string) (string, bridgeAlloc) {
	t.Helper()
	path := filepath.Join(dir, name+".nomad.hcl")
	must.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	out, code := a.Nomad("job", "run", "-detach", path)
	must.Eq(t, 0, code, must.Sprint(out))
	var id string
	var d bridgeAlloc
	wait.Poll(t, 30*time.Second, name+"'s allocation running", func() (bool, string) {
		var allocs []allocStub
		if err := a.GetJSON("/v1/job/"+name+"/allocations", &allocs); err != nil {
			return false, err.Error()
		}
		if len(allocs) != 1 {
			return false, fmt.Sprintf("%+v", allocs)
		}
		id = allocs[0].ID
		if err := a.GetJSON("/v1/allocation/"+id, &d); err != nil {
			return false, err.Error()
		}
		return d.ClientStatus == "running", fmt.Sprintf("%+v", d)
	})
	return id, d
}

// get fetches url, from inside the network namespace at from unless it is
// empty, and returns the body.
func get(from, url string) (string, error) {
	host := strings.TrimPrefix(url, "http://")
	host = host[:strings.Index(host, "/")]
	conn, err := netns.DialTCP(from, host, 3*time.Second)
	if err != nil {
		return "", err
	}
	// The connection is made first, in the namespace; the transport
	// only speaks HTTP over it.
	c := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{
		DialContext: func(context.Context, string, string) (net.Conn, error) { return conn, nil },
	}}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// netnsInode is the inode of a namespace file or /proc/<pid>/ns/net.
func netnsInode(t *testing.T, path string) uint64 {
	t.Helper()
	var st syscall.Stat_t
	must.NoError(t, syscall.Stat(path, &st), must.Sprint(path))
	return st.Ino
}

// A bridge-mode raw_exec task listening on its `to` port answers on its
// mapped host port from the host and from an exec task's allocation in
// bridge mode too; both tasks, and `alloc exec` beside the first, run in
// their allocation's namespace; a
// stopped allocation leaves no namespace, veth or iptables rule; after
// kill -9 of the agent the next one adopts the running allocation's
// namespace untouched, and its stop then leaves nothing either. This is
// what job files written for docker and service meshes rely on, and an
// edge node restarts its agent often.
func TestAgent_BridgeNetworking(t *testing.T) {
	harness.NeedExecDriver(t)
	env := allocnettest.New(t)
	iface, hostIP := allocnettest.HostAddr(t)
	agents := harness.NewAgents(t)
	dir := agents.Dir
	p := harness.Ports{HTTP: harness.FreePort(t), RPC: harness.FreePort(t), Serf: harness.FreePort(t)}
	a := agents.Add(harness.AgentConfig{Name: "agent", Ports: p, Config: bridgeAgentConfig(p, env.Config.Bridge, iface)})
	// What the agent leaves is where an agent keeps it.
	env.Config.NetnsDir = allocnet.DefaultNetnsDir
	env.Config.StateDir = filepath.Join(dir, "agent", "data", "client", "allocnet")
	a.Start()
	waitNodeReady(t, a)

	webID, web := runBridgeJob(t, a, dir, "web", `job "web" {
  group "g" {
    network {
      mode = "bridge"
      port "http" {
        to = 8080
      }
    }
    service {
      name     = "web-host"
      port     = "http"
      provider = "nomad"
    }
    service {
      name         = "web-alloc"
      port         = "http"
      provider     = "nomad"
      address_mode = "alloc"
      check {
        type     = "http"
        path     = "/index.html"
        interval = "1s"
        timeout  = "1s"
      }
    }
    task "server" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo hello-from-$NOMAD_ALLOC_IP_http-$NOMAD_PORT_http > $NOMAD_TASK_DIR/index.html; exec busybox httpd -f -p $NOMAD_PORT_http -h $NOMAD_TASK_DIR"]
      }
    }
  }
}
`)
	agents.KillAtEnd(harness.AllocMark(webID))
	t.Cleanup(func() { _ = allocnettest.TeardownLeft(env, webID) })
	ports := web.AllocatedResources.Shared.Ports
	must.Len(t, 1, ports)
	must.Eq(t, 8080, ports[0].To)
	url := fmt.Sprintf("http://%s/index.html", net.JoinHostPort(hostIP, strconv.Itoa(ports[0].Value)))
	webNS := filepath.Join(allocnet.DefaultNetnsDir, webID)
	pids := harness.AllocPIDs(webID)
	must.Len(t, 1, pids)
	must.Eq(t, netnsInode(t, webNS), netnsInode(t, fmt.Sprintf("/proc/%d/ns/net", pids[0])), must.Sprint("the raw_exec task runs in its allocation's namespace"))

	out, code := a.Nomad("alloc", "exec", "-task", "server", webID, "readlink", "/proc/self/ns/net")
	must.Eq(t, 0, code, must.Sprint(out))
	must.StrContains(t, out, fmt.Sprintf("net:[%d]", netnsInode(t, webNS)), must.Sprint("alloc exec runs beside the task, in its namespace"))

	var body string
	wait.Poll(t, 15*time.Second, "the task answering on its host port from the host", func() (bool, string) {
		var err error
		body, err = get("", url)
		return err == nil, fmt.Sprint(body, err)
	})
	must.StrHasPrefix(t, "hello-from-"+env.Config.Bridge.Subnet[:strings.LastIndex(env.Config.Bridge.Subnet, ".")], body)
	must.StrHasSuffix(t, "-8080\n", body)

	clientID, _ := runBridgeJob(t, a, dir, "client", `job "client" {
  group "g" {
    network {
      mode = "bridge"
    }
    task "sleeper" {
      driver = "exec"
      config {
        command = "/usr/bin/busybox"
        args    = ["sleep", "300"]
      }
    }
  }
}
`)
	agents.KillAtEnd(harness.AllocMark(clientID))
	t.Cleanup(func() { _ = allocnettest.TeardownLeft(env, clientID) })
	clientNS := filepath.Join(allocnet.DefaultNetnsDir, clientID)
	cpids := harness.AllocPIDs(clientID)
	must.SliceNotEmpty(t, cpids)
	must.Eq(t, netnsInode(t, clientNS), netnsInode(t, fmt.Sprintf("/proc/%d/ns/net", cpids[0])), must.Sprint("the exec task runs in its allocation's namespace"))
	got, err := get(clientNS, url)
	must.NoError(t, err, must.Sprint("from the other allocation to ", url))
	must.Eq(t, body, got)
	must.Len(t, 2, env.BridgePorts(t))

	// Services register the host's mapping by default, and with
	// address_mode "alloc" the allocation's own address and `to` port,
	// which another allocation reaches and the check probes.
	type instance struct {
		Address string
		Port    int
	}
	lookup := func(name string) instance {
		t.Helper()
		var got []instance
		wait.Poll(t, 15*time.Second, "the instance of "+name, func() (bool, string) {
			if err := a.GetJSON("/v1/service/"+name, &got); err != nil {
				return false, err.Error()
			}
			return len(got) == 1, fmt.Sprint(got)
		})
		return got[0]
	}
	must.Eq(t, instance{Address: ports[0].HostIP, Port: ports[0].Value}, lookup("web-host"))
	inNS := lookup("web-alloc")
	must.StrHasPrefix(t, env.Config.Bridge.Subnet[:strings.LastIndex(env.Config.Bridge.Subnet, ".")], inNS.Address)
	must.Eq(t, 8080, inNS.Port)
	got, err = get(clientNS, fmt.Sprintf("http://%s/index.html", net.JoinHostPort(inNS.Address, strconv.Itoa(inNS.Port))))
	must.NoError(t, err, must.Sprint("from the other allocation to the alloc-mode instance"))
	must.Eq(t, body, got)
	wait.Poll(t, 15*time.Second, "the alloc-mode check passing", func() (bool, string) {
		var checks map[string]struct{ Status, Output string }
		if err := a.GetJSON("/v1/client/allocation/"+webID+"/checks", &checks); err != nil {
			return false, err.Error()
		}
		for _, c := range checks {
			if c.Status != "success" {
				return false, fmt.Sprint(checks)
			}
		}
		return len(checks) == 1, fmt.Sprint(checks)
	})

	out, code = a.Nomad("job", "stop", "web")
	must.Eq(t, 0, code, must.Sprint(out))
	wait.Poll(t, 30*time.Second, "the stopped allocation's network gone", func() (bool, string) {
		left := env.Leftovers(t, webID)
		return len(left) == 0 && len(env.BridgePorts(t)) == 1, fmt.Sprint(left, env.BridgePorts(t))
	})
	_, err = get("", url)
	must.Error(t, err, must.Sprint("the stopped allocation's host port still answers"))

	// The agent dies without a chance to clean up; the next one adopts
	// the running allocation's namespace as it is.
	before := netnsInode(t, clientNS)
	a.Kill9()
	a.Start()
	waitNodeReady(t, a)
	wait.Poll(t, 15*time.Second, "the client allocation running after the restart", func() (bool, string) {
		var d bridgeAlloc
		if err := a.GetJSON("/v1/allocation/"+clientID, &d); err != nil {
			return false, err.Error()
		}
		return d.ClientStatus == "running", fmt.Sprintf("%+v", d)
	})
	must.Eq(t, cpids, harness.AllocPIDs(clientID), must.Sprint("the task was re-attached, not restarted"))
	must.Eq(t, before, netnsInode(t, clientNS), must.Sprint("the namespace was adopted, not made again"))
	must.Len(t, 1, env.BridgePorts(t))

	out, code = a.Nomad("job", "stop", "client")
	must.Eq(t, 0, code, must.Sprint(out))
	wait.Poll(t, 30*time.Second, "nothing of either allocation left", func() (bool, string) {
		left := append(env.Leftovers(t, clientID), env.Leftovers(t, webID)...)
		return len(left) == 0 && len(env.BridgePorts(t)) == 0, fmt.Sprint(left, env.BridgePorts(t))
	})
}
