package cluster

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fabric is a private network for one test: a Linux bridge in a network
// namespace of its own, one namespace per agent attached to the bridge by
// a veth pair, and one more veth from the host into the bridge namespace
// so the test reaches every agent's HTTP API. Names and the /24 subnet are
// random, so runs never collide; each name carries the test binary's PID,
// so a later run removes what a killed one left behind.
//
//	host (10.X.Y.1) ──veth── [bridge ns: br0] ──veth── [ns of server-1: 10.X.Y.10]
//	                                          ──veth── [ns of client-1: 10.X.Y.20] ...
type fabric struct {
	t      testing.TB
	tag    string // "<pid>-<hex>": in every namespace name
	ifTag  string // short hex: in every interface name (15 bytes at most)
	prefix string // "10.X.Y."
	brNS   string
	hostIf string

	mu      sync.Mutex
	members map[string]*member
}

// member is one agent's namespace on the fabric.
type member struct {
	name string
	ns   string
	ip   string
	// brIf is the member's veth end in the bridge namespace: taking it
	// down is a carrier loss on the member's side.
	brIf string
}

const fabricNSPrefix = "ne2e-"

// needFabric skips the test unless this machine can build a fabric.
func needFabric(t testing.TB) {
	t.Helper()
	if raceEnabled {
		t.Skip("partition tests run the real binary, built without the race detector: nothing to gain from running them again under it")
	}
	if os.Geteuid() != 0 {
		t.Skip("partition tests need root to create network namespaces")
	}
	for _, tool := range []string{"ip", "iptables", "tc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("partition tests need %s (Debian: apt-get install iproute2 iptables)", tool)
		}
	}
}

// newFabric builds the bridge and the host's link to it, and registers
// its teardown (namespaces and links), which also runs on SIGINT/SIGTERM.
func newFabric(t testing.TB) *fabric {
	t.Helper()
	needFabric(t)
	sweepStaleFabrics()
	hex := fmt.Sprintf("%04x", rand.IntN(1<<16))
	f := &fabric{
		t:       t,
		tag:     fmt.Sprintf("%d-%s", os.Getpid(), hex),
		ifTag:   hex,
		prefix:  freeSubnet(t),
		members: map[string]*member{},
	}
	f.brNS = fabricNSPrefix + f.tag + "-br"
	f.hostIf = "nh" + f.ifTag
	registerTeardown(f)
	t.Cleanup(func() { unregisterTeardown(f); f.teardown() })

	f.sh("ip", "netns", "add", f.brNS)
	f.ns(f.brNS, "ip", "link", "set", "lo", "up")
	f.ns(f.brNS, "ip", "link", "add", "br0", "type", "bridge")
	f.ns(f.brNS, "ip", "link", "set", "br0", "up")
	f.sh("ip", "link", "add", f.hostIf, "type", "veth", "peer", "name", "nb"+f.ifTag)
	f.sh("ip", "link", "set", "nb"+f.ifTag, "netns", f.brNS)
	f.ns(f.brNS, "ip", "link", "set", "nb"+f.ifTag, "master", "br0", "up")
	f.sh("ip", "addr", "add", f.prefix+"1/24", "dev", f.hostIf)
	f.sh("ip", "link", "set", f.hostIf, "up")
	return f
}

// add gives name a namespace on the fabric with address 10.X.Y.host.
func (f *fabric) add(name string, host int) *member {
	f.t.Helper()
	m := &member{
		name: name,
		ns:   fmt.Sprintf("%s%s-%d", fabricNSPrefix, f.tag, host),
		ip:   fmt.Sprintf("%s%d", f.prefix, host),
		brIf: fmt.Sprintf("nb%s-%d", f.ifTag, host),
	}
	peer := fmt.Sprintf("nm%s-%d", f.ifTag, host)
	f.sh("ip", "netns", "add", m.ns)
	f.mu.Lock()
	f.members[name] = m
	f.mu.Unlock()
	f.sh("ip", "link", "add", m.brIf, "type", "veth", "peer", "name", peer)
	f.sh("ip", "link", "set", m.brIf, "netns", f.brNS)
	f.ns(f.brNS, "ip", "link", "set", m.brIf, "master", "br0", "up")
	f.sh("ip", "link", "set", peer, "netns", m.ns)
	f.ns(m.ns, "ip", "link", "set", peer, "name", "eth0")
	f.ns(m.ns, "ip", "addr", "add", m.ip+"/24", "dev", "eth0")
	f.ns(m.ns, "ip", "link", "set", "eth0", "up")
	f.ns(m.ns, "ip", "link", "set", "lo", "up")
	return m
}

func (f *fabric) member(name string) *member {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.members[name]
	if m == nil {
		f.t.Fatalf("no member %q on the fabric", name)
	}
	return m
}

func (f *fabric) others(name string) []*member {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*member
	for n, m := range f.members {
		if n != name {
			out = append(out, m)
		}
	}
	return out
}

// teardown removes every namespace (and with them their links) and the
// host's link. It runs after the cluster's cleanup killed the agents.
func (f *fabric) teardown() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.members {
		_ = exec.Command("ip", "netns", "del", m.ns).Run()
	}
	_ = exec.Command("ip", "netns", "del", f.brNS).Run()
	_ = exec.Command("ip", "link", "del", f.hostIf).Run()
}

func (f *fabric) sh(args ...string) {
	f.t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		f.t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// ns runs a command inside a namespace.
func (f *fabric) ns(ns string, args ...string) {
	f.t.Helper()
	f.sh(append([]string{"ip", "netns", "exec", ns}, args...)...)
}

// freeSubnet picks a 10.X.Y.0/24 no interface of the host uses.
func freeSubnet(t testing.TB) string {
	t.Helper()
	out, _ := exec.Command("ip", "-o", "addr").Output()
	for range 100 {
		p := fmt.Sprintf("10.%d.%d.", 200+rand.IntN(50), rand.IntN(256))
		if !bytes.Contains(out, []byte(" "+p)) {
			return p
		}
	}
	t.Fatal("no free 10.x.y.0/24 subnet after 100 tries")
	return ""
}

// sweepStaleFabrics removes the namespaces of test binaries that died
// without tearing down (SIGKILL), and their host links.
func sweepStaleFabrics() {
	out, _ := exec.Command("ip", "netns", "list").Output()
	for _, line := range strings.Split(string(out), "\n") {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		rest, ok := strings.CutPrefix(name, fabricNSPrefix)
		if !ok {
			continue
		}
		pidStr, hex, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid == os.Getpid() || alive(pid) {
			continue
		}
		_ = exec.Command("ip", "netns", "del", name).Run()
		if h, _, _ := strings.Cut(hex, "-"); h != "" {
			_ = exec.Command("ip", "link", "del", "nh"+h).Run()
		}
	}
}

// Live fabrics, torn down on an interrupt: `go test` killed by Ctrl-C
// must not leave namespaces and agents behind.
var (
	liveMu      sync.Mutex
	liveFabrics = map[*fabric]bool{}
	sigOnce     sync.Once
)

func registerTeardown(f *fabric) {
	liveMu.Lock()
	liveFabrics[f] = true
	liveMu.Unlock()
	sigOnce.Do(func() {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
		go func() {
			sig := <-ch
			for _, pid := range pidsWithCmdline(nomadBin) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			liveMu.Lock()
			for f := range liveFabrics {
				f.teardown()
			}
			liveMu.Unlock()
			fmt.Fprintf(os.Stderr, "e2e: %v: agents killed, network namespaces removed\n", sig)
			os.Exit(1)
		}()
	})
}

func unregisterTeardown(f *fabric) {
	liveMu.Lock()
	delete(liveFabrics, f)
	liveMu.Unlock()
}

// cutMode is one way a link fails.
type cutMode struct {
	name string
	cut  func(f *fabric, m *member)
	heal func(f *fabric, m *member)
}

// linkDown takes the member's veth end on the bridge down: the member's
// side loses its carrier, as when a modem loses its signal.
var linkDown = cutMode{
	name: "link down",
	cut:  func(f *fabric, m *member) { f.ns(f.brNS, "ip", "link", "set", m.brIf, "down") },
	heal: func(f *fabric, m *member) { f.ns(f.brNS, "ip", "link", "set", m.brIf, "up") },
}

// silentDrop makes every packet to and from the member vanish while every
// link stays up, as a congested or misrouted cell does: iptables DROP in
// INPUT of the member and of every other namespace for the member's
// address. INPUT only: a DROP in OUTPUT would tell the sender (EPERM),
// which a real network never does.
var silentDrop = cutMode{
	name: "iptables DROP",
	cut: func(f *fabric, m *member) {
		f.ns(m.ns, "iptables", "-I", "INPUT", "-j", "DROP")
		for _, o := range f.others(m.name) {
			f.ns(o.ns, "iptables", "-I", "INPUT", "-s", m.ip, "-j", "DROP")
		}
	},
	heal: func(f *fabric, m *member) {
		f.ns(m.ns, "iptables", "-D", "INPUT", "-j", "DROP")
		for _, o := range f.others(m.name) {
			f.ns(o.ns, "iptables", "-D", "INPUT", "-s", m.ip, "-j", "DROP")
		}
	},
}

// degradation is what degrade did, for restore to undo.
type degradation struct{ netem bool }

// degrade makes the member's link an LTE link in a bad cell, both ways:
// tc netem delay with jitter and 5 % loss on both ends of its veth. On a
// kernel without sch_netem (this CI machine's), a token bucket at 512
// kbit/s (queueing delay) and iptables' random 5 % drop in INPUT stand in
// for it, and the test log says so.
func (f *fabric) degrade(m *member) degradation {
	f.t.Helper()
	netem := []string{"tc", "qdisc", "replace", "dev", m.brIf, "root", "netem", "delay", "150ms", "50ms", "loss", "5%"}
	if err := exec.Command("ip", append([]string{"netns", "exec", f.brNS}, netem...)...).Run(); err == nil {
		f.ns(m.ns, "tc", "qdisc", "replace", "dev", "eth0", "root", "netem", "delay", "150ms", "50ms", "loss", "5%")
		return degradation{netem: true}
	}
	f.t.Logf("no tc netem on this kernel: degrading %s with a 512 kbit/s token bucket and a random 5%% drop instead", m.name)
	for _, at := range [][2]string{{f.brNS, m.brIf}, {m.ns, "eth0"}} {
		f.ns(at[0], "tc", "qdisc", "replace", "dev", at[1], "root", "tbf", "rate", "512kbit", "burst", "16kb", "latency", "400ms")
		f.ns(at[0], "iptables", "-I", "INPUT", "-m", "statistic", "--mode", "random", "--probability", "0.05", "-j", "DROP")
	}
	return degradation{}
}

// restore takes the degradation away.
func (f *fabric) restore(m *member, d degradation) {
	f.t.Helper()
	for _, at := range [][2]string{{f.brNS, m.brIf}, {m.ns, "eth0"}} {
		f.ns(at[0], "tc", "qdisc", "del", "dev", at[1], "root")
		if !d.netem {
			f.ns(at[0], "iptables", "-D", "INPUT", "-m", "statistic", "--mode", "random", "--probability", "0.05", "-j", "DROP")
		}
	}
}

// netCluster is a cluster of agents, each in its own namespace on a
// fabric, with upstream-style config files and short heartbeats
// (min_heartbeat_ttl 2s, heartbeat_grace 1s).
type netCluster struct {
	*cluster
	fab *fabric
}

// newNetCluster writes the configs of `servers` servers and `clients`
// clients on a new fabric. Servers are 10.X.Y.10+, clients 10.X.Y.20+;
// every agent uses upstream's default ports. It starts nothing.
func newNetCluster(t testing.TB, servers, clients int) *netCluster {
	t.Helper()
	fab := newFabric(t) // first: its teardown runs after the agents die
	c := &cluster{t: t, dir: t.TempDir()}
	p := ports{HTTP: 4646, RPC: 4647, Serf: 4648}
	var sms []*member
	var rpcs []string
	for i := range servers {
		m := fab.add(fmt.Sprintf("server-%d", i+1), 10+i)
		sms = append(sms, m)
		rpcs = append(rpcs, strconv.Quote(fmt.Sprintf("%s:%d", m.ip, p.RPC)))
	}
	for i, m := range sms {
		var join []string
		for j, o := range sms {
			if j != i {
				join = append(join, strconv.Quote(fmt.Sprintf("%s:%d", o.ip, p.Serf)))
			}
		}
		cfg := strings.Replace(serverConfigAt(m.name, m.ip, p, servers, join),
			`heartbeat_grace   = "2s"`, `heartbeat_grace   = "1s"`, 1)
		a := newAgentProc(t, c.dir, m.name, p, cfg)
		a.ip, a.netns = m.ip, m.ns
		c.servers = append(c.servers, a)
	}
	for i := range clients {
		m := fab.add(fmt.Sprintf("client-%d", i+1), 20+i)
		a := newAgentProc(t, c.dir, m.name, ports{HTTP: p.HTTP}, clientConfigAt(m.name, m.ip, ports{HTTP: p.HTTP}, rpcs))
		a.ip, a.netns = m.ip, m.ns
		c.clients = append(c.clients, a)
	}
	t.Cleanup(c.cleanup)
	return &netCluster{cluster: c, fab: fab}
}

// cut fails the link of the agent named name in the given mode and
// returns the heal.
func (nc *netCluster) cut(name string, mode cutMode) (heal func()) {
	nc.t.Helper()
	m := nc.fab.member(name)
	mode.cut(nc.fab, m)
	healed := false
	nc.t.Cleanup(func() { // a failed test leaves no rule behind for the teardown to trip on
		if !healed {
			mode.heal(nc.fab, m)
		}
	})
	return func() {
		nc.t.Helper()
		mode.heal(nc.fab, m)
		healed = true
	}
}

// settle is how long the fabric tests give the servers to notice a cut:
// the TTL plus grace with room for a heartbeat interval in flight.
const settle = 30 * time.Second
