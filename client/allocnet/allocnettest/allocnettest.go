// Package allocnettest stands up a real allocnet.Manager for tests on a
// bridge and subnet of their own, and lists what an allocation's network
// left on the host, so that tests can prove nothing leaked.
package allocnettest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nomad-edge/nomad/client/allocnet"
)

var seq atomic.Uint32

// Env is a test's bridge: its manager's config and where it pins
// namespaces.
type Env struct {
	Config allocnet.Config
	// Netns is the network namespace (a name under /run/netns) the
	// agent runs in, where its bridge, veths and rules are: a fabric
	// member's, for an agent cut off by e2e/internal/harness. Empty: the
	// host's.
	Netns string
}

// Command is name with args run in the env's Netns (see Env.Netns).
func (e *Env) Command(name string, args ...string) *exec.Cmd {
	if e.Netns == "" {
		return exec.Command(name, args...)
	}
	return exec.Command("nsenter", append([]string{"--net=/run/netns/" + e.Netns, name}, args...)...)
}

// Rules is the iptables ruleset of the env's Netns, tables nat and
// filter, without counters: two equal answers mean no rule was added,
// removed or rewritten between them.
func (e *Env) Rules(t testing.TB) string {
	t.Helper()
	var out strings.Builder
	for _, table := range []string{"nat", "filter"} {
		b, err := e.Command("iptables-save", "-t", table).CombinedOutput()
		if err != nil {
			t.Fatalf("iptables-save -t %s: %v: %s", table, err, b)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "#") {
				continue // the generator and the time of the dump
			}
			if strings.HasPrefix(line, ":") {
				// ":CHAIN POLICY [packets:bytes]": the counters move.
				line, _, _ = strings.Cut(line, " [")
			}
			out.WriteString(line + "\n")
		}
	}
	return out.String()
}

// New skips the test unless it runs as root with the CNI plugins and
// iptables installed, and returns a config on a bridge and /24 of the
// test's own (in 198.18.0.0/15, the benchmarking range, so that no real
// network is shadowed), with state and namespaces under a temp dir. The
// bridge is deleted when the test ends.
func New(t testing.TB) *Env {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("bridge networking needs root (network namespaces, iptables)")
	}
	if _, err := exec.LookPath("iptables"); err != nil {
		t.Skip("bridge networking needs iptables (Debian: iptables)")
	}
	k := seq.Add(1)
	dir := t.TempDir()
	cfg := allocnet.Config{
		Bridge: allocnet.BridgeConfig{
			Name:   fmt.Sprintf("nt%d-%d", os.Getpid()%100000, k),
			Subnet: freeSubnet(t, uint32(os.Getpid())*7+k),
		},
		StateDir:     filepath.Join(dir, "state"),
		NetnsDir:     filepath.Join(dir, "netns"),
		CNIConfigDir: filepath.Join(dir, "cni-config"),
	}
	m, err := allocnet.New(cfg)
	if err != nil {
		t.Fatalf("allocnet: %v", err)
	}
	if err := m.CheckPlugins(); err != nil {
		t.Skipf("bridge networking: %v", err)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", cfg.Bridge.Name).Run() })
	return &Env{Config: cfg}
}

// freeSubnet is a /24 of 198.18.0.0/15 no route of the host uses yet,
// searched from start: test binaries run side by side, each with bridges
// of its own, and two bridges on one subnet would steal each other's
// traffic.
func freeSubnet(t testing.TB, start uint32) string {
	t.Helper()
	routes, err := exec.Command("ip", "-o", "-4", "route", "show", "table", "all").Output()
	if err != nil {
		t.Fatalf("ip route: %v", err)
	}
	for i := range uint32(500) {
		n := (start + i) % 500
		subnet := fmt.Sprintf("198.%d.%d.0/24", 18+n/250, n%250)
		if !strings.Contains(string(routes), subnet) {
			return subnet
		}
	}
	t.Skip("no free /24 in 198.18.0.0/15 for a test bridge")
	return ""
}

// Manager returns a manager on the env's bridge, as a (re)started agent
// builds it.
func (e *Env) Manager(t testing.TB) *allocnet.Manager {
	t.Helper()
	m, err := allocnet.New(e.Config)
	if err != nil {
		t.Fatalf("allocnet: %v", err)
	}
	return m
}

// Leftovers lists what the network of allocID left on the host: its
// pinned namespace, its record and the iptables rules naming it (the
// plugins tag each with the container ID). Empty means nothing leaked;
// BridgePorts lists the veths, which carry no allocation's name.
func (e *Env) Leftovers(t testing.TB, allocID string) []string {
	t.Helper()
	var out []string
	if _, err := os.Stat(filepath.Join(e.Config.NetnsDir, allocID)); err == nil {
		out = append(out, "netns "+allocID)
	}
	if _, err := os.Stat(filepath.Join(e.Config.StateDir, "allocs", allocID+".json")); err == nil {
		out = append(out, "record "+allocID)
	}
	for _, table := range []string{"nat", "filter"} {
		b, err := e.Command("iptables-save", "-t", table).CombinedOutput()
		if err != nil {
			t.Fatalf("iptables-save -t %s: %v: %s", table, err, b)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, allocID) {
				out = append(out, table+": "+line)
			}
		}
	}
	return out
}

// PowerLoss does to the network of allocID what a reboot does on a
// device whose netns directory is on disk: the namespace is freed (and
// its veth with it) but the pin's file stays, and the rules naming the
// allocation are gone with the kernel's state. Only this allocation's
// rules are removed: tests on the host's network run side by side.
func (e *Env) PowerLoss(t testing.TB, allocID string) {
	t.Helper()
	pin := filepath.Join(e.Config.NetnsDir, allocID)
	if err := unix.Unmount(pin, unix.MNT_DETACH); err != nil {
		t.Fatalf("unpin %s: %v", pin, err)
	}
	for _, table := range []string{"nat", "filter"} {
		b, err := e.Command("iptables-save", "-t", table).CombinedOutput()
		if err != nil {
			t.Fatalf("iptables-save -t %s: %v: %s", table, err, b)
		}
		emptied := map[string]bool{}
		for _, line := range strings.Split(string(b), "\n") {
			rule, ok := strings.CutPrefix(line, "-A ")
			if !ok || !strings.Contains(line, allocID) {
				continue
			}
			args, err := splitRule(rule)
			if err != nil {
				t.Fatalf("iptables-save -t %s: %q: %v", table, line, err)
			}
			if out, err := e.Command("iptables", append([]string{"-t", table, "-D"}, args...)...).CombinedOutput(); err != nil {
				t.Fatalf("iptables -t %s -D %s: %v: %s", table, rule, err, out)
			}
			if strings.HasPrefix(args[0], "CNI-") {
				emptied[args[0]] = true
			}
		}
		// The allocation's own chains, now empty; a chain another
		// allocation's rules still use refuses, and stays.
		for chain := range emptied {
			_ = e.Command("iptables", "-t", table, "-X", chain).Run()
		}
	}
}

// splitRule splits an iptables-save rule into arguments, honouring its
// double quotes (the plugins' comments).
func splitRule(rule string) ([]string, error) {
	var args []string
	var cur strings.Builder
	inQuote, started := false, false
	for i := 0; i < len(rule); i++ {
		c := rule[i]
		switch {
		case c == '\\' && inQuote && i+1 < len(rule):
			i++
			cur.WriteByte(rule[i])
		case c == '"':
			inQuote, started = !inQuote, true
		case c == ' ' && !inQuote:
			if started {
				args = append(args, cur.String())
				cur.Reset()
				started = false
			}
		default:
			cur.WriteByte(c)
			started = true
		}
	}
	if inQuote {
		return nil, errors.New("unterminated quote")
	}
	if started {
		args = append(args, cur.String())
	}
	return args, nil
}

// BridgePorts lists the links attached to the env's bridge (the hosts'
// ends of the allocations' veths).
func (e *Env) BridgePorts(t testing.TB) []string {
	t.Helper()
	b, err := e.Command("ip", "-o", "link", "show", "master", e.Config.Bridge.Name).CombinedOutput()
	if err != nil {
		if strings.Contains(string(b), "does not exist") {
			return nil
		}
		t.Fatalf("ip link show master %s: %v: %s", e.Config.Bridge.Name, err, b)
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if f := strings.Fields(line); len(f) > 1 {
			out = append(out, strings.TrimSuffix(f[1], ":"))
		}
	}
	return out
}

// HostIP is an address of this host that is not loopback nor on a
// bridge of ours: where the host and other allocations reach a mapped
// port, as clients off the host would.
func HostIP(t testing.TB) string {
	t.Helper()
	_, ip := HostAddr(t)
	return ip
}

// HostAddr is the interface of the default route and its address (what
// HostIP returns); the test is skipped on a host without one.
func HostAddr(t testing.TB) (iface, ip string) {
	t.Helper()
	b, err := exec.Command("ip", "-o", "-4", "route", "get", "1.1.1.1").CombinedOutput()
	if err == nil {
		f := strings.Fields(string(b))
		for i := 0; i+1 < len(f); i++ {
			switch f[i] {
			case "dev":
				iface = f[i+1]
			case "src":
				ip = f[i+1]
			}
		}
	}
	if iface == "" || ip == "" {
		t.Skipf("no default route to find the host's address: %v %s", err, b)
	}
	return iface, ip
}

// TeardownLeft tears down what a failed test left of allocID's network,
// so that one failure does not leak into the host for the next test.
func TeardownLeft(e *Env, allocID string) error {
	m, err := allocnet.New(e.Config)
	if err != nil {
		return err
	}
	return m.Teardown(context.Background(), allocID)
}

// WriteCNINetwork configures a CNI network named name in the env's
// cni_config_dir, as an operator would for mode cni/<name>: ptp veths
// (no bridge) on a /24 of the test's own, with host-local IPAM and
// portmap, returning its subnet. The plugins' rules carry the allocation
// ID, so Leftovers sees them.
func (e *Env) WriteCNINetwork(t testing.TB, name string) string {
	t.Helper()
	subnet := freeSubnet(t, uint32(os.Getpid())*7+seq.Add(1)+250)
	conf := fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": %q,
  "plugins": [
    {"type": "ptp", "ipMasq": true,
     "ipam": {"type": "host-local", "subnet": %q, "routes": [{"dst": "0.0.0.0/0"}], "dataDir": %q}},
    {"type": "portmap", "capabilities": {"portMappings": true}, "snat": true}
  ]
}`, name, subnet, filepath.Join(e.Config.StateDir, "test-ipam"))
	if err := os.MkdirAll(e.Config.CNIConfigDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.Config.CNIConfigDir, name+".conflist"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	return subnet
}
