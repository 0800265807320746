package harness

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/nomad-edge/nomad/testutil/race"
)

// Fabric is a private network for one test: a Linux bridge in a network
// namespace of its own, one namespace per member attached to the bridge by
// a veth pair, and one more veth from the host into the bridge namespace
// so the test reaches every member (an agent's HTTP API). Names and the
// /24 subnet are random, so runs never collide; each name carries the test
// binary's PID, so a later run removes what a killed one left behind.
//
//	host (10.X.Y.1) ──veth── [bridge ns: br0] ──veth── [ns of server-1: 10.X.Y.10]
//	                                          ──veth── [ns of client-1: 10.X.Y.20] ...
type Fabric struct {
	t      testing.TB
	tag    string // "<pid>-<hex>": in every namespace name
	ifTag  string // short hex: in every interface name (15 bytes at most)
	prefix string // "10.X.Y."
	brNS   string
	hostIf string

	mu      sync.Mutex
	members map[string]*Member
}

// Member is one namespace on the fabric.
type Member struct {
	Name string
	// NS is the network namespace (AgentConfig.Netns), IP its address.
	NS string
	IP string
	// brIf is the member's veth end in the bridge namespace: taking it
	// down is a carrier loss on the member's side.
	brIf string
}

const fabricNSPrefix = "ne2e-"

// NeedFabric skips the test unless this machine can build a fabric and
// inject the faults the test will apply.
func NeedFabric(t testing.TB, faults ...Fault) {
	t.Helper()
	if race.Enabled {
		t.Skip("partition tests run the real binary, built without the race detector: nothing to gain from running them again under it")
	}
	if os.Geteuid() != 0 {
		t.Skip("partition tests need root to create network namespaces")
	}
	tools := []string{"ip"}
	for _, f := range faults {
		tools = append(tools, f.tools...)
	}
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("partition tests need %s (Debian: apt-get install iproute2 iptables)", tool)
		}
	}
}

// NewFabric builds the bridge and the host's link to it, or skips the test
// when this machine cannot build it or inject the faults the test names
// (see NeedFabric), and registers its teardown (namespaces and links).
// Make it before the Agents that run on it: cleanups run last first, so
// the agents then die before their namespaces go.
func NewFabric(t testing.TB, faults ...Fault) *Fabric {
	t.Helper()
	NeedFabric(t, faults...)
	sweepStaleFabrics()
	hex := fmt.Sprintf("%04x", rand.IntN(1<<16))
	f := &Fabric{
		t:       t,
		tag:     fmt.Sprintf("%d-%s", os.Getpid(), hex),
		ifTag:   hex,
		prefix:  freeSubnet(t),
		members: map[string]*Member{},
	}
	f.brNS = fabricNSPrefix + f.tag + "-br"
	f.hostIf = "nh" + f.ifTag
	live.Lock()
	live.fabrics[f] = true
	live.Unlock()
	t.Cleanup(func() {
		live.Lock()
		delete(live.fabrics, f)
		live.Unlock()
		f.teardown()
	})

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

// Add gives name a namespace on the fabric with address 10.X.Y.host.
func (f *Fabric) Add(name string, host int) *Member {
	f.t.Helper()
	m := &Member{
		Name: name,
		NS:   fmt.Sprintf("%s%s-%d", fabricNSPrefix, f.tag, host),
		IP:   fmt.Sprintf("%s%d", f.prefix, host),
		brIf: fmt.Sprintf("nb%s-%d", f.ifTag, host),
	}
	peer := fmt.Sprintf("nm%s-%d", f.ifTag, host)
	f.sh("ip", "netns", "add", m.NS)
	f.mu.Lock()
	f.members[name] = m
	f.mu.Unlock()
	f.sh("ip", "link", "add", m.brIf, "type", "veth", "peer", "name", peer)
	f.sh("ip", "link", "set", m.brIf, "netns", f.brNS)
	f.ns(f.brNS, "ip", "link", "set", m.brIf, "master", "br0", "up")
	f.sh("ip", "link", "set", peer, "netns", m.NS)
	f.ns(m.NS, "ip", "link", "set", peer, "name", "eth0")
	f.ns(m.NS, "ip", "addr", "add", m.IP+"/24", "dev", "eth0")
	f.ns(m.NS, "ip", "link", "set", "eth0", "up")
	f.ns(m.NS, "ip", "link", "set", "lo", "up")
	return m
}

// HostIP is the host's address on the fabric: a server the test itself
// runs there (an artifact's, say) is reachable from every member, and cut
// off from a member with the rest of its network.
func (f *Fabric) HostIP() string { return f.prefix + "1" }

// HostAliases gives the host n more addresses on the fabric (10.X.Y.100
// up, at most 100) and returns them, for load from many sources that each
// stay under an agent's per-client connection limits. They go with the
// host's link at teardown.
func (f *Fabric) HostAliases(n int) []string {
	f.t.Helper()
	if n > 100 {
		f.t.Fatalf("HostAliases: %d addresses asked, the fabric has 100 to give", n)
	}
	out := make([]string, n)
	for i := range n {
		out[i] = fmt.Sprintf("%s%d", f.prefix, 100+i)
		f.sh("ip", "addr", "add", out[i]+"/32", "dev", f.hostIf)
	}
	return out
}

// Member is the member named name.
func (f *Fabric) Member(name string) *Member {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.members[name]
	if m == nil {
		f.t.Fatalf("no member %q on the fabric", name)
	}
	return m
}

func (f *Fabric) others(name string) []*Member {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*Member
	for n, m := range f.members {
		if n != name {
			out = append(out, m)
		}
	}
	return out
}

// teardown removes every namespace (and with them their links) and the
// host's link.
func (f *Fabric) teardown() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.members {
		_ = exec.Command("ip", "netns", "del", m.NS).Run()
	}
	_ = exec.Command("ip", "netns", "del", f.brNS).Run()
	_ = exec.Command("ip", "link", "del", f.hostIf).Run()
}

func (f *Fabric) sh(args ...string) {
	f.t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		f.t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// ns runs a command inside a namespace.
func (f *Fabric) ns(ns string, args ...string) {
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
		if err != nil || pid == os.Getpid() || Alive(pid) {
			continue
		}
		_ = exec.Command("ip", "netns", "del", name).Run()
		if h, _, _ := strings.Cut(hex, "-"); h != "" {
			_ = exec.Command("ip", "link", "del", "nh"+h).Run()
		}
	}
}

// Fault is one way a member's link fails.
type Fault struct {
	Name string
	// tools are the commands it needs besides ip.
	tools []string
	// inject makes the link fail and returns what undoes it.
	inject func(f *Fabric, m *Member) (undo func())
}

// Apply makes the link of the member named name fail as fault says and
// returns the heal. A test that ends without healing is healed by its
// cleanup, so no rule is left for the teardown to trip on.
func (f *Fabric) Apply(name string, fault Fault) (heal func()) {
	f.t.Helper()
	for _, tool := range fault.tools {
		if _, err := exec.LookPath(tool); err != nil {
			f.t.Fatalf("%s needs %s: name the fault in NewFabric, which skips the test where it is missing", fault.Name, tool)
		}
	}
	undo := fault.inject(f, f.Member(name))
	var once sync.Once
	heal = func() {
		f.t.Helper()
		once.Do(undo)
	}
	f.t.Cleanup(heal)
	return heal
}

// LinkDown takes the member's veth end on the bridge down: the member's
// side loses its carrier, as when a modem loses its signal.
var LinkDown = Fault{
	Name: "link down",
	inject: func(f *Fabric, m *Member) func() {
		f.ns(f.brNS, "ip", "link", "set", m.brIf, "down")
		return func() { f.ns(f.brNS, "ip", "link", "set", m.brIf, "up") }
	},
}

// SilentDrop makes every packet to and from the member vanish while every
// link stays up, as a congested or misrouted cell does: iptables DROP in
// INPUT of the member and of every other member for the member's address.
// INPUT only: a DROP in OUTPUT would tell the sender (EPERM), which a real
// network never does.
var SilentDrop = Fault{
	Name:  "iptables DROP",
	tools: []string{"iptables"},
	inject: func(f *Fabric, m *Member) func() {
		others := f.others(m.Name)
		f.ns(m.NS, "iptables", "-I", "INPUT", "-j", "DROP")
		for _, o := range others {
			f.ns(o.NS, "iptables", "-I", "INPUT", "-s", m.IP, "-j", "DROP")
		}
		return func() {
			f.ns(m.NS, "iptables", "-D", "INPUT", "-j", "DROP")
			for _, o := range others {
				f.ns(o.NS, "iptables", "-D", "INPUT", "-s", m.IP, "-j", "DROP")
			}
		}
	},
}

// Degraded makes the member's link an LTE link in a bad cell, both ways:
// tc netem delay 150 ms ± 50 ms with 5 % loss on both ends of its veth. On
// a kernel without sch_netem, a token bucket at 512 kbit/s (queueing
// delay) and iptables' random 5 % drop in INPUT stand in for it, and the
// test log says so. Heartbeats still get through.
var Degraded = Fault{
	Name:  "degraded",
	tools: []string{"tc", "iptables"},
	inject: func(f *Fabric, m *Member) func() {
		ends := [][2]string{{f.brNS, m.brIf}, {m.NS, "eth0"}}
		drop := []string{"INPUT", "-m", "statistic", "--mode", "random", "--probability", "0.05", "-j", "DROP"}
		netem := []string{"tc", "qdisc", "replace", "dev", m.brIf, "root", "netem", "delay", "150ms", "50ms", "loss", "5%"}
		withNetem := exec.Command("ip", append([]string{"netns", "exec", f.brNS}, netem...)...).Run() == nil
		if withNetem {
			f.ns(m.NS, "tc", "qdisc", "replace", "dev", "eth0", "root", "netem", "delay", "150ms", "50ms", "loss", "5%")
		} else {
			f.t.Logf("no tc netem on this kernel: degrading %s with a 512 kbit/s token bucket and a random 5%% drop instead", m.Name)
			for _, at := range ends {
				f.ns(at[0], "tc", "qdisc", "replace", "dev", at[1], "root", "tbf", "rate", "512kbit", "burst", "16kb", "latency", "400ms")
				f.ns(at[0], append([]string{"iptables", "-I"}, drop...)...)
			}
		}
		return func() {
			for _, at := range ends {
				f.ns(at[0], "tc", "qdisc", "del", "dev", at[1], "root")
				if !withNetem {
					f.ns(at[0], append([]string{"iptables", "-D"}, drop...)...)
				}
			}
		}
	},
}

// Isolate cuts the member off from the members named peers, both ways,
// while everyone else (the host, the other members) still reaches both
// sides: a partition between servers that clients see across. iptables
// DROP in INPUT, of the member for each peer's address and of each peer
// for the member's.
func Isolate(peers ...string) Fault {
	return Fault{
		Name:  "isolated from " + strings.Join(peers, ","),
		tools: []string{"iptables"},
		inject: func(f *Fabric, m *Member) func() {
			return dropBetween(f, m, peers, true)
		},
	}
}

// DropFrom makes the member deaf to the members named peers: what they
// send it vanishes, what it sends them arrives (an asymmetric link).
func DropFrom(peers ...string) Fault {
	return Fault{
		Name:  "deaf to " + strings.Join(peers, ","),
		tools: []string{"iptables"},
		inject: func(f *Fabric, m *Member) func() {
			return dropBetween(f, m, peers, false)
		},
	}
}

// dropBetween drops at m what comes from peers and, both set, at each
// peer what comes from m; it returns the undo.
func dropBetween(f *Fabric, m *Member, peers []string, both bool) func() {
	type rule struct{ ns, src string }
	var rules []rule
	for _, name := range peers {
		p := f.Member(name)
		rules = append(rules, rule{m.NS, p.IP})
		if both {
			rules = append(rules, rule{p.NS, m.IP})
		}
	}
	for _, r := range rules {
		f.ns(r.ns, "iptables", "-I", "INPUT", "-s", r.src, "-j", "DROP")
	}
	return func() {
		for _, r := range rules {
			f.ns(r.ns, "iptables", "-D", "INPUT", "-s", r.src, "-j", "DROP")
		}
	}
}
