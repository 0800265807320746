package allocrunner

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/allocnet"
	"github.com/nomad-edge/nomad/client/clienttest"
	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// fakeNetwork is a NetworkManager that records its calls; the real one,
// on real namespaces, is tested in client/allocnet and e2e/devagent.
type fakeNetwork struct {
	mu        sync.Mutex
	setups    []allocnet.SetupInput
	teardowns []string
}

func (f *fakeNetwork) Setup(_ context.Context, in allocnet.SetupInput) (*allocnet.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.setups = append(f.setups, in)
	return &allocnet.Status{AllocID: in.AllocID, NetnsPath: "/var/run/netns/" + in.AllocID, Interface: "eth0", Address: "172.26.64.9", Ports: in.Ports}, nil
}

func (f *fakeNetwork) Teardown(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.teardowns = append(f.teardowns, id)
	return nil
}

func (f *fakeNetwork) calls() ([]allocnet.SetupInput, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]allocnet.SetupInput(nil), f.setups...), append([]string(nil), f.teardowns...)
}

// joiningDriver is the mock driver claiming it joins namespaces, keeping
// the configs it was started with.
type joiningDriver struct {
	drivers.Driver
	mu      sync.Mutex
	configs []*drivers.TaskConfig
}

func (d *joiningDriver) Capabilities() drivers.Capabilities {
	return drivers.Capabilities{FSIsolation: drivers.FSIsolationNone, NetNamespace: true}
}

func (d *joiningDriver) StartTask(cfg *drivers.TaskConfig) (*drivers.TaskHandle, error) {
	d.mu.Lock()
	d.configs = append(d.configs, cfg.Copy())
	d.mu.Unlock()
	return d.Driver.StartTask(cfg)
}

// bridgeAlloc is a mock allocation whose group is in bridge mode with a
// port mapped to 8080 and one without `to`.
func bridgeAlloc(config map[string]any) *structs.Allocation {
	a := clienttest.MockAlloc("node-1", config)
	a.Job.TaskGroups[0].Networks = []*structs.NetworkResource{{Mode: structs.NetworkModeBridge}}
	a.AllocatedResources.Shared.Ports = structs.AllocatedPorts{
		{Label: "http", Value: 23456, To: 8080, HostIP: "10.0.0.5"},
		{Label: "raw", Value: 23457, HostIP: "10.0.0.5"},
	}
	return a
}

// TestAllocRunner_BridgeNetwork checks that a bridge-mode allocation gets
// its network before its task starts, that the task is started in the
// namespace with the allocation's address in its environment, and that
// the network is torn down once the allocation completes: the order that
// keeps tasks off the host's network and leaves nothing behind.
func TestAllocRunner_BridgeNetwork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		net := &fakeNetwork{}
		h.network = net
		d := &joiningDriver{Driver: h.drivers["mock_driver"]}
		h.drivers["mock_driver"] = d
		a := bridgeAlloc(map[string]any{"run_for": "1s"})
		a.Job.Type = structs.JobTypeBatch
		ar := h.runner(t, a)
		go ar.Run()
		defer ar.Destroy()
		h.rec.waitStatus(t, a.ID, structs.AllocClientStatusComplete)
		<-ar.WaitCh()

		setups, teardowns := net.calls()
		must.Eq(t, []allocnet.SetupInput{{AllocID: a.ID, Ports: []allocnet.PortMapping{
			{Label: "http", HostPort: 23456, ContainerPort: 8080, HostIP: "10.0.0.5"},
			{Label: "raw", HostPort: 23457, ContainerPort: 23457, HostIP: "10.0.0.5"},
		}}}, setups)
		must.Eq(t, []string{a.ID}, teardowns)
		d.mu.Lock()
		cfg := d.configs[0]
		d.mu.Unlock()
		must.Eq(t, "/var/run/netns/"+a.ID, cfg.NetNSPath)
		must.Eq(t, "172.26.64.9:8080", cfg.Env["NOMAD_ALLOC_ADDR_http"])
		must.Eq(t, "8080", cfg.Env["NOMAD_PORT_http"])
		must.Eq(t, "23456", cfg.Env["NOMAD_HOST_PORT_http"])
	})
}

// TestAllocRunner_BridgeShutdownKeepsNetwork checks that an agent going
// away leaves a running allocation's network alone: its tasks keep
// running and the next agent adopts it.
func TestAllocRunner_BridgeShutdownKeepsNetwork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		net := &fakeNetwork{}
		h.network = net
		h.drivers["mock_driver"] = &joiningDriver{Driver: h.drivers["mock_driver"]}
		a := bridgeAlloc(map[string]any{"run_for": "1h"})
		ar := h.runner(t, a)
		go ar.Run()
		h.rec.waitStatus(t, a.ID, structs.AllocClientStatusRunning)
		ar.Shutdown()
		_, teardowns := net.calls()
		must.SliceEmpty(t, teardowns)
	})
}

// TestAllocRunner_BridgeRefusals checks that a bridge-mode allocation
// fails, with the reason, when a task's driver cannot join the namespace
// (docker here: running it on the host's network would silently break
// the job's port mappings) or the client cannot do bridge mode at all.
func TestAllocRunner_BridgeRefusals(t *testing.T) {
	for _, tc := range []struct {
		name    string
		network NetworkManager
		joins   bool
		want    string
	}{
		{"driver cannot join", &fakeNetwork{}, false, `driver "mock_driver" of task "web" cannot start tasks in the allocation's network namespace`},
		{"no bridge on client", nil, true, `network mode "bridge" is unavailable on this client`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t)
				h.network = tc.network
				if tc.joins {
					h.drivers["mock_driver"] = &joiningDriver{Driver: h.drivers["mock_driver"]}
				}
				a := bridgeAlloc(nil)
				ar := h.runner(t, a)
				go ar.Run()
				defer ar.Destroy()
				got := h.rec.waitStatus(t, a.ID, structs.AllocClientStatusFailed)
				ts := got.TaskStates["web"]
				must.SliceNotEmpty(t, ts.Events)
				must.StrContains(t, ts.Events[len(ts.Events)-1].SetupError, tc.want)
			})
		})
	}
}

// TestAllocRunner_CNINetwork checks that a cni/<name> allocation asks for
// the network its mode names, and starts on a client whose bridge plugins
// are missing (its network may use others), while a bridge-mode one fails
// there naming bridge mode: one missing plugin must not take every
// namespace mode off the node.
func TestAllocRunner_CNINetwork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		net := &fakeNetwork{}
		h.network = net
		h.networkUnavailable = errors.New("CNI plugins missing: bridge")
		h.drivers["mock_driver"] = &joiningDriver{Driver: h.drivers["mock_driver"]}
		a := bridgeAlloc(map[string]any{"run_for": "1h"})
		a.Job.TaskGroups[0].Networks[0].Mode = "cni/mynet"
		ar := h.runner(t, a)
		go ar.Run()
		defer ar.Destroy()
		h.rec.waitStatus(t, a.ID, structs.AllocClientStatusRunning)
		setups, _ := net.calls()
		must.Len(t, 1, setups)
		must.Eq(t, "mynet", setups[0].CNINetwork)

		b := bridgeAlloc(nil)
		br := h.runner(t, b)
		go br.Run()
		defer br.Destroy()
		got := h.rec.waitStatus(t, b.ID, structs.AllocClientStatusFailed)
		ev := got.TaskStates["web"].Events
		must.StrContains(t, ev[len(ev)-1].SetupError, `network mode "bridge" is unavailable on this client: CNI plugins missing: bridge`)
	})
}

// filesDriver is the joining driver that also takes the network files.
type filesDriver struct{ *joiningDriver }

func (d *filesDriver) Capabilities() drivers.Capabilities {
	c := d.joiningDriver.Capabilities()
	c.NetworkFiles = true
	return c
}

// TestAllocRunner_NetworkDNSAndHostname checks that network.dns becomes a
// resolv.conf of the allocation and network.hostname a hosts file naming
// the allocation's address, both handed to the task's driver with the
// name, and that a driver that cannot show a task its own files (as
// raw_exec) fails the allocation naming network.dns rather than run it
// with the host's resolver.
func TestAllocRunner_NetworkDNSAndHostname(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.network = &fakeNetwork{}
		d := &filesDriver{&joiningDriver{Driver: h.drivers["mock_driver"]}}
		h.drivers["mock_driver"] = d
		a := bridgeAlloc(map[string]any{"run_for": "1h"})
		a.Name = "example.web[1]"
		// Interpolated as upstream does, with the allocation's names.
		a.Job.TaskGroups[0].Networks[0].Hostname = "web-${NOMAD_ALLOC_INDEX}"
		a.Job.TaskGroups[0].Networks[0].DNS = &structs.DNSConfig{Servers: []string{"10.0.0.53"}, Options: []string{"ndots:2"}}
		ar := h.runner(t, a)
		go ar.Run()
		defer ar.Destroy()
		h.rec.waitStatus(t, a.ID, structs.AllocClientStatusRunning)
		d.mu.Lock()
		cfg := d.configs[0]
		d.mu.Unlock()
		must.Eq(t, "web-1", cfg.Hostname)
		resolv, err := os.ReadFile(cfg.ResolvConfPath)
		must.NoError(t, err)
		must.StrContains(t, string(resolv), "nameserver 10.0.0.53\n")
		must.StrContains(t, string(resolv), "options ndots:2\n")
		hosts, err := os.ReadFile(cfg.HostsPath)
		must.NoError(t, err)
		must.StrContains(t, string(hosts), "172.26.64.9 web-1\n")

		h.drivers["mock_driver"] = &joiningDriver{Driver: d.Driver}
		b := clienttest.MockAlloc("node-1", nil)
		b.Job.TaskGroups[0].Networks = []*structs.NetworkResource{{DNS: &structs.DNSConfig{Servers: []string{"10.0.0.53"}}}}
		br := h.runner(t, b)
		go br.Run()
		defer br.Destroy()
		got := h.rec.waitStatus(t, b.ID, structs.AllocClientStatusFailed)
		ev := got.TaskStates["web"].Events
		must.StrContains(t, ev[len(ev)-1].SetupError, `network.dns: driver "mock_driver" of task "web" cannot give a task its own resolv.conf`)

		// A name that is no host name once interpolated (an unknown
		// name stays as written) fails the allocation, naming the key.
		h.drivers["mock_driver"] = d
		c := bridgeAlloc(map[string]any{"run_for": "1h"})
		c.Job.TaskGroups[0].Networks[0].Hostname = "web-${meta.missing}"
		cr := h.runner(t, c)
		go cr.Run()
		defer cr.Destroy()
		got = h.rec.waitStatus(t, c.ID, structs.AllocClientStatusFailed)
		ev = got.TaskStates["web"].Events
		must.StrContains(t, ev[len(ev)-1].SetupError, `network.hostname "web-${meta.missing}" (from "web-${meta.missing}") is not a valid host name`)
	})
}

// TestRenderResolvConf checks that a dns block replaces only the lines it
// sets: a block with servers alone keeps the host's search domains and
// options, as an operator adding one resolver expects.
func TestRenderResolvConf(t *testing.T) {
	host := []byte("# host\nnameserver 192.168.1.1\nnameserver 192.168.1.2\nsearch lan example\noptions edns0\n")
	got := string(renderResolvConf(host, &structs.DNSConfig{Servers: []string{"10.0.0.53"}}))
	must.StrContains(t, got, "nameserver 10.0.0.53\nsearch lan example\noptions edns0\n")
	must.StrNotContains(t, got, "192.168.1.1")
	got = string(renderResolvConf(host, &structs.DNSConfig{Searches: []string{"svc"}, Options: []string{"ndots:1", "rotate"}}))
	must.StrContains(t, got, "nameserver 192.168.1.1\nnameserver 192.168.1.2\nsearch svc\noptions ndots:1 rotate\n")
}
