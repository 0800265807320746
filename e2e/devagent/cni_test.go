package devagent

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/allocnet"
	"github.com/nomad-edge/nomad/client/allocnet/allocnettest"
	"github.com/nomad-edge/nomad/e2e/internal/harness"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// An exec task of a cni/<name> group runs on the CNI network of the
// client's cni_config_dir, answers on its mapped host port from the host,
// reads the group's network.dns at /etc/resolv.conf and its hostname at
// /etc/hosts and as its host name, and leaves nothing once stopped. This
// is the path of an operator's own CNI network (macvlan on an LTE router,
// ptp), end to end through the agent.
func TestAgent_CNINetworkDNSAndHostname(t *testing.T) {
	harness.NeedExecDriver(t)
	env := allocnettest.New(t)
	env.WriteCNINetwork(t, "testnet")
	iface, hostIP := allocnettest.HostAddr(t)
	agents := harness.NewAgents(t)
	dir := agents.Dir
	p := harness.Ports{HTTP: harness.FreePort(t), RPC: harness.FreePort(t), Serf: harness.FreePort(t)}
	cfg := strings.Replace(bridgeAgentConfig(p, env.Config.Bridge, iface), "  enabled               = true\n",
		fmt.Sprintf("  enabled               = true\n  cni_config_dir        = %q\n", env.Config.CNIConfigDir), 1)
	a := agents.Add(harness.AgentConfig{Name: "agent", Ports: p, Config: cfg})
	env.Config.NetnsDir = allocnet.DefaultNetnsDir
	env.Config.StateDir = filepath.Join(dir, "agent", "data", "client", "allocnet")
	a.Start()
	waitNodeReady(t, a)

	id, alloc := runBridgeJob(t, a, dir, "web", `job "web" {
  group "g" {
    network {
      mode     = "cni/testnet"
      hostname = "web-1"
      dns {
        servers  = ["10.0.0.53"]
        searches = ["svc.example"]
      }
      port "http" {
        to = 8080
      }
    }
    task "server" {
      driver = "exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "cat /etc/resolv.conf /etc/hosts > /local/out; busybox hostname >> /local/out; exec busybox httpd -f -p 8080 -h /local"]
      }
    }
  }
}
`)
	agents.KillAtEnd(harness.AllocMark(id))
	t.Cleanup(func() { _ = allocnettest.TeardownLeft(env, id) })
	ports := alloc.AllocatedResources.Shared.Ports
	must.Len(t, 1, ports)
	url := fmt.Sprintf("http://%s/out", net.JoinHostPort(hostIP, strconv.Itoa(ports[0].Value)))
	var body string
	wait.Poll(t, 15*time.Second, "the task answering on its host port", func() (bool, string) {
		var err error
		body, err = get("", url)
		return err == nil && strings.Contains(body, "web-1\n"), fmt.Sprint(body, err)
	})
	must.StrContains(t, body, "nameserver 10.0.0.53\nsearch svc.example\n")
	must.StrContains(t, body, " web-1\nweb-1\n")
	must.SliceEmpty(t, env.BridgePorts(t), must.Sprint("a cni allocation is not on the bridge"))

	out, code := a.Nomad("job", "stop", "web")
	must.Eq(t, 0, code, must.Sprint(out))
	wait.Poll(t, 30*time.Second, "the stopped allocation's network gone", func() (bool, string) {
		left := env.Leftovers(t, id)
		return len(left) == 0, fmt.Sprint(left)
	})
}
