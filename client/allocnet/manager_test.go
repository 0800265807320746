package allocnet_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/allocnet"
	"github.com/nomad-edge/nomad/client/allocnet/allocnettest"
	"github.com/nomad-edge/nomad/helper/netns"
)

// freePort returns a host port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", ":0")
	must.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// serveIn listens on port inside the namespace and answers every
// connection with reply, until the test ends.
func serveIn(t *testing.T, path string, port int, reply string) {
	t.Helper()
	var ln net.Listener
	must.NoError(t, netns.Do(path, func() (err error) {
		ln, err = net.Listen("tcp", ":"+strconv.Itoa(port))
		return err
	}))
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte(reply + "\n"))
			c.Close()
		}
	}()
}

// ask connects to addr (from inside the namespace at from, unless empty)
// and returns the first line it answers.
func ask(from, addr string) (string, error) {
	c, err := netns.DialTCP(from, addr, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	return line, err
}

// TestManager_PortMapTrafficAndCleanup checks that a bridge-mode
// allocation's `to` port answers on its host port from the host and from
// another allocation, and that teardown leaves no namespace, veth, record
// or iptables rule: what operators rely on for ports to work and for a
// busy node not to fill with leftovers.
func TestManager_PortMapTrafficAndCleanup(t *testing.T) {
	env := allocnettest.New(t)
	m := env.Manager(t)
	ctx := context.Background()
	hostIP := allocnettest.HostIP(t)
	idA, idB := "aaaaaaaa-0000-4000-8000-"+strconv.Itoa(100000000000+int(time.Now().UnixNano()%1e11)), "bbbbbbbb-0000-4000-8000-000000000001"
	hostPort := freePort(t)

	a, err := m.Setup(ctx, allocnet.SetupInput{AllocID: idA, Ports: []allocnet.PortMapping{{Label: "http", HostPort: hostPort, ContainerPort: 8080}}})
	must.NoError(t, err)
	t.Cleanup(func() { _ = m.Teardown(ctx, idA) })
	must.False(t, a.Adopted)
	must.NotEq(t, "", a.Address)
	b, err := m.Setup(ctx, allocnet.SetupInput{AllocID: idB})
	must.NoError(t, err)
	t.Cleanup(func() { _ = m.Teardown(ctx, idB) })
	must.Len(t, 2, env.BridgePorts(t))

	serveIn(t, a.NetnsPath, 8080, "hello from a")
	addr := net.JoinHostPort(hostIP, strconv.Itoa(hostPort))
	got, err := ask("", addr)
	must.NoError(t, err, must.Sprint("from the host to ", addr))
	must.Eq(t, "hello from a\n", got)
	got, err = ask(b.NetnsPath, addr)
	must.NoError(t, err, must.Sprint("from allocation b to ", addr))
	must.Eq(t, "hello from a\n", got)
	// Inside, the task's own port is what answers.
	got, err = ask(b.NetnsPath, net.JoinHostPort(a.Address, "8080"))
	must.NoError(t, err)
	must.Eq(t, "hello from a\n", got)

	must.NoError(t, m.Teardown(ctx, idA))
	must.NoError(t, m.Teardown(ctx, idB))
	must.SliceEmpty(t, env.Leftovers(t, idA))
	must.SliceEmpty(t, env.Leftovers(t, idB))
	must.SliceEmpty(t, env.BridgePorts(t))
	_, err = ask("", addr)
	must.Error(t, err, must.Sprint("the host port still answers after teardown"))
	// Tearing down again is a no-op, as a Destroy after the stop does.
	must.NoError(t, m.Teardown(ctx, idA))
}

// TestManager_RestartAdoptsAndReaps checks that a restarted agent's
// manager adopts a running allocation's network without touching it (its
// listener keeps answering through the same mapping) and reaps the
// network of an allocation that is gone, leaving nothing of it: an agent
// restart must neither cut a workload off nor leak.
func TestManager_RestartAdoptsAndReaps(t *testing.T) {
	env := allocnettest.New(t)
	ctx := context.Background()
	hostIP := allocnettest.HostIP(t)
	live, gone := "cccccccc-0000-4000-8000-000000000001", "dddddddd-0000-4000-8000-000000000001"
	hostPort := freePort(t)
	ports := []allocnet.PortMapping{{Label: "http", HostPort: hostPort, ContainerPort: 8080}}

	first := env.Manager(t)
	a, err := first.Setup(ctx, allocnet.SetupInput{AllocID: live, Ports: ports})
	must.NoError(t, err)
	t.Cleanup(func() { _ = first.Teardown(ctx, live) })
	_, err = first.Setup(ctx, allocnet.SetupInput{AllocID: gone})
	must.NoError(t, err)
	serveIn(t, a.NetnsPath, 8080, "still here")

	// The agent restarts: a new manager over the same state.
	second := env.Manager(t)
	must.NoError(t, second.Reap(ctx, func(id string) bool { return id == live }))
	must.SliceEmpty(t, env.Leftovers(t, gone))
	must.Len(t, 1, env.BridgePorts(t))
	again, err := second.Setup(ctx, allocnet.SetupInput{AllocID: live, Ports: ports})
	must.NoError(t, err)
	must.True(t, again.Adopted)
	must.Eq(t, a.Address, again.Address)
	got, err := ask("", net.JoinHostPort(hostIP, strconv.Itoa(hostPort)))
	must.NoError(t, err)
	must.Eq(t, "still here\n", got)

	must.NoError(t, second.Reap(ctx, func(string) bool { return false }))
	must.SliceEmpty(t, env.Leftovers(t, live))
	must.SliceEmpty(t, env.BridgePorts(t))
}

// TestManager_HalfMadeIsRedone checks that the record of a network whose
// CNI ADD never finished (the agent was killed during it) is torn down
// and set up afresh instead of adopted: adopting it would hand the tasks a
// namespace without an address, and leak what the ADD had made.
func TestManager_HalfMadeIsRedone(t *testing.T) {
	env := allocnettest.New(t)
	m := env.Manager(t)
	ctx := context.Background()
	id := "eeeeeeee-0000-4000-8000-000000000001"
	_, err := m.Setup(ctx, allocnet.SetupInput{AllocID: id})
	must.NoError(t, err)
	t.Cleanup(func() { _ = m.Teardown(ctx, id) })
	must.NoError(t, allocnet.ForgetAddress(m, id))

	again, err := m.Setup(ctx, allocnet.SetupInput{AllocID: id})
	must.NoError(t, err)
	must.False(t, again.Adopted)
	must.NotEq(t, "", again.Address)
	must.True(t, netns.Exists(again.NetnsPath))
	must.Len(t, 1, env.BridgePorts(t))
	must.NoError(t, m.Teardown(ctx, id))
	must.SliceEmpty(t, env.Leftovers(t, id), must.Sprint(env.Leftovers(t, id)))
	must.SliceEmpty(t, env.BridgePorts(t))
}

// TestManager_RebootedPinIsRedone checks that an allocation whose
// namespace a reboot freed, on a device whose netns directory is on disk
// so that the pin survives as a plain file, gets its network again: the
// plugins refuse that file as a namespace, so a DEL that passed it would
// fail, the record would stay and the allocation could never restart.
func TestManager_RebootedPinIsRedone(t *testing.T) {
	env := allocnettest.New(t)
	m := env.Manager(t)
	ctx := context.Background()
	id := "ffffffff-0000-4000-8000-000000000001"
	ports := []allocnet.PortMapping{{Label: "http", HostPort: freePort(t), ContainerPort: 8080}}
	st, err := m.Setup(ctx, allocnet.SetupInput{AllocID: id, Ports: ports})
	must.NoError(t, err)
	t.Cleanup(func() { _ = m.Teardown(ctx, id) })
	env.PowerLoss(t, id)
	must.False(t, netns.Exists(st.NetnsPath))
	must.Eq(t, []string{"netns " + id, "record " + id}, env.Leftovers(t, id))

	again, err := m.Setup(ctx, allocnet.SetupInput{AllocID: id, Ports: ports})
	must.NoError(t, err)
	must.False(t, again.Adopted)
	must.True(t, netns.Exists(again.NetnsPath))
	must.NoError(t, m.Teardown(ctx, id))
	must.SliceEmpty(t, env.Leftovers(t, id), must.Sprint(env.Leftovers(t, id)))
	must.SliceEmpty(t, env.BridgePorts(t))
}

// TestNew_RefusesBadConfig checks that bad bridge settings are refused
// naming the key, before anything touches the host.
func TestNew_RefusesBadConfig(t *testing.T) {
	for _, tc := range []struct {
		bridge allocnet.BridgeConfig
		want   string
	}{
		{allocnet.BridgeConfig{Name: "a/b"}, "bridge_network_name"},
		{allocnet.BridgeConfig{Name: "waytoolongbridgename"}, "bridge_network_name"},
		{allocnet.BridgeConfig{Subnet: "10.0.0.0"}, "bridge_network_subnet"},
		{allocnet.BridgeConfig{Subnet: "fd00::/64"}, "bridge_network_subnet"},
	} {
		_, err := allocnet.New(allocnet.Config{StateDir: t.TempDir(), Bridge: tc.bridge})
		must.ErrorContains(t, err, tc.want)
	}
	_, err := allocnet.New(allocnet.Config{})
	must.Error(t, err)
	m, err := allocnet.New(allocnet.Config{StateDir: t.TempDir(), CNIPath: []string{t.TempDir()}})
	must.NoError(t, err)
	must.True(t, errors.Is(m.CheckPlugins(), allocnet.ErrPluginsMissing))
	_, err = m.Setup(context.Background(), allocnet.SetupInput{AllocID: "../x"})
	must.True(t, errors.Is(err, allocnet.ErrBadAllocID))
}

// TestManager_CNINetwork checks mode cni/<name>: the network named in the
// cni_config_dir is listed for the fingerprint, gives the allocation an
// address in its subnet and maps its port so that the host reaches the
// task, and its teardown leaves no namespace, record or rule; a network
// the dir does not configure fails naming it, leaving nothing. This is
// what an operator's own CNI network (macvlan, ptp) rests on.
func TestManager_CNINetwork(t *testing.T) {
	env := allocnettest.New(t)
	subnet := env.WriteCNINetwork(t, "testnet")
	m := env.Manager(t)
	ctx := context.Background()
	names, err := m.CNINetworks()
	must.NoError(t, err)
	must.Eq(t, []string{"testnet"}, names)

	// IDs of this process's own: Leftovers greps the host's rules, which
	// other test binaries' allocations share.
	id := fmt.Sprintf("c0c0c0c0-0000-4000-8000-%012d", os.Getpid())
	hostPort := freePort(t)
	st, err := m.Setup(ctx, allocnet.SetupInput{AllocID: id, CNINetwork: "testnet",
		Ports: []allocnet.PortMapping{{Label: "http", HostPort: hostPort, ContainerPort: 8080}}})
	must.NoError(t, err)
	t.Cleanup(func() { _ = m.Teardown(ctx, id) })
	must.Eq(t, "testnet", st.CNINetwork)
	pfx := netip.MustParsePrefix(subnet)
	must.True(t, pfx.Contains(netip.MustParseAddr(st.Address)), must.Sprint(st.Address, " not in ", subnet))
	must.SliceEmpty(t, env.BridgePorts(t), must.Sprint("a CNI network uses no bridge of ours"))

	serveIn(t, st.NetnsPath, 8080, "hello over cni")
	got, err := ask("", net.JoinHostPort(allocnettest.HostIP(t), strconv.Itoa(hostPort)))
	must.NoError(t, err)
	must.Eq(t, "hello over cni\n", got)

	// An agent restart adopts it as it is.
	again, err := env.Manager(t).Setup(ctx, allocnet.SetupInput{AllocID: id, CNINetwork: "testnet"})
	must.NoError(t, err)
	must.True(t, again.Adopted)

	must.NoError(t, m.Teardown(ctx, id))
	must.SliceEmpty(t, env.Leftovers(t, id), must.Sprint(env.Leftovers(t, id)))

	missing := fmt.Sprintf("c1c1c1c1-0000-4000-8000-%012d", os.Getpid())
	_, err = m.Setup(ctx, allocnet.SetupInput{AllocID: missing, CNINetwork: "nosuchnet"})
	must.True(t, errors.Is(err, allocnet.ErrCNINetworkMissing), must.Sprint(err))
	must.StrContains(t, err.Error(), `"cni/nosuchnet"`)
	must.SliceEmpty(t, env.Leftovers(t, missing))
}
