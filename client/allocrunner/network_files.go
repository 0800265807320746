package allocrunner

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/helper/atomicfile"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// hostResolvConf is the host's resolver configuration, what a dns block
// leaves unset is taken from.
var hostResolvConf = "/etc/resolv.conf"

// Files of the allocation's directory that its tasks see at /etc; outside
// the shared alloc dir, so that no task can change another's.
const (
	resolvConfName = "resolv.conf"
	hostsName      = "hosts"
)

// checkNetworkFiles refuses a group with network.dns or network.hostname
// when one of its tasks' drivers cannot give the task those files and
// name (raw_exec runs tasks on the host's /etc): the task would resolve
// names differently from what its job says.
func (h *networkHook) checkNetworkFiles(nw *structs.NetworkResource) error {
	if nw == nil || (nw.DNS == nil && nw.Hostname == "") {
		return nil
	}
	key := "network.dns"
	if nw.DNS == nil {
		key = "network.hostname"
	}
	for _, tr := range h.tasks {
		if tr.driver != nil && !drivers.CapabilitiesOf(tr.driver).NetworkFiles {
			return fmt.Errorf("%s: driver %q of task %q cannot give a task its own resolv.conf or host name", key, tr.task.Driver, tr.task.Name)
		}
	}
	return nil
}

// writeNetworkFiles writes the allocation's resolv.conf (network.dns) and
// hosts file (network.hostname, naming the allocation's address) for the
// drivers to bind at /etc. Written again on every setup, an adopted
// allocation's included: the same input gives the same files.
func (h *networkHook) writeNetworkFiles(nw *structs.NetworkResource) error {
	if nw == nil {
		return nil
	}
	if nw.DNS != nil {
		host, err := os.ReadFile(hostResolvConf)
		if err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("network.dns: reading the host's %s: %w", hostResolvConf, err)
		}
		path := filepath.Join(h.allocDir, resolvConfName)
		if err := atomicfile.Write(path, renderResolvConf(host, nw.DNS), 0o644); err != nil {
			return fmt.Errorf("network.dns: %w", err)
		}
		h.resolvConf = path
	}
	if nw.Hostname != "" && h.status != nil {
		name := h.interpolateHostname(nw.Hostname)
		if !structs.ValidHostname(name) {
			return fmt.Errorf("network.hostname %q (from %q) is not a valid host name (letters, digits, '-' and '.')", name, nw.Hostname)
		}
		path := filepath.Join(h.allocDir, hostsName)
		if err := atomicfile.Write(path, renderHosts(h.status.Address, name), 0o644); err != nil {
			return fmt.Errorf("network.hostname: %w", err)
		}
		h.hosts, h.hostname = path, name
	}
	return nil
}

// interpolateHostname replaces the ${...} of network.hostname, as upstream
// does: the allocation's NOMAD_* names (NOMAD_ALLOC_INDEX, NOMAD_JOB_NAME,
// ...) and the node's attr., meta. and node. names.
func (h *networkHook) interpolateHostname(s string) string {
	vars := h.node.vars()
	maps.Copy(vars, allocEnv(h.alloc, h.node, nil))
	return interpolate(s, vars)
}

// renderResolvConf is the host's resolv.conf with the lines the dns block
// sets replaced: its servers for the host's nameservers, its searches for
// the host's search (and domain) line, its options for the host's options.
func renderResolvConf(host []byte, dns *structs.DNSConfig) []byte {
	var servers, searches, options []string
	for _, line := range strings.Split(string(host), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || strings.HasPrefix(f[0], "#") || strings.HasPrefix(f[0], ";") {
			continue
		}
		switch f[0] {
		case "nameserver":
			servers = append(servers, f[1])
		case "search", "domain":
			searches = f[1:]
		case "options":
			options = append(options, f[1:]...)
		}
	}
	if len(dns.Servers) > 0 {
		servers = dns.Servers
	}
	if len(dns.Searches) > 0 {
		searches = dns.Searches
	}
	if len(dns.Options) > 0 {
		options = dns.Options
	}
	var b bytes.Buffer
	b.WriteString("# Written by Nomad from the group's network.dns block.\n")
	for _, s := range servers {
		fmt.Fprintf(&b, "nameserver %s\n", s)
	}
	if len(searches) > 0 {
		fmt.Fprintf(&b, "search %s\n", strings.Join(searches, " "))
	}
	if len(options) > 0 {
		fmt.Fprintf(&b, "options %s\n", strings.Join(options, " "))
	}
	return b.Bytes()
}

// renderHosts names localhost and the allocation's host name at its
// address in its namespace.
func renderHosts(addr, hostname string) []byte {
	var b bytes.Buffer
	b.WriteString("# Written by Nomad from the group's network.hostname.\n")
	b.WriteString("127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n")
	if addr != "" {
		fmt.Fprintf(&b, "%s %s\n", addr, hostname)
	} else {
		fmt.Fprintf(&b, "127.0.1.1 %s\n", hostname)
	}
	return b.Bytes()
}
