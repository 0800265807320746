package allocnet

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/invoke"
	cnitypes "github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/hashicorp/go-hclog"

	"github.com/nomad-edge/nomad/helper/netns"
)

var (
	// ErrPluginsMissing is why bridge mode is unavailable: a plugin it
	// needs is in none of the cni_path directories.
	ErrPluginsMissing = errors.New("CNI plugins missing")
	// ErrBadAllocID refuses an ID that cannot name a file.
	ErrBadAllocID = errors.New("invalid allocation ID")
)

// pluginTimeout bounds one CNI ADD or DEL: a plugin stuck on the xtables
// lock must not hold an allocation forever.
const pluginTimeout = time.Minute

// Config is the input of New.
type Config struct {
	Logger hclog.Logger
	Bridge BridgeConfig
	// CNIPath are the directories searched for the plugins (cni_path);
	// empty means DefaultCNIPath.
	CNIPath []string
	// StateDir holds the records, libcni's cache and the IPAM leases:
	// the client's data dir, so that they survive the agent. Required.
	StateDir string
	// NetnsDir is where namespaces are pinned; empty means
	// DefaultNetnsDir.
	NetnsDir string
	// CNIConfigDir holds the networks of cni/<name> modes
	// (cni_config_dir); empty means DefaultCNIConfigDir.
	CNIConfigDir string
}

// Manager sets up and tears down allocations' namespaces. It is safe for
// concurrent use for different allocations.
type Manager struct {
	logger   hclog.Logger
	bridge   string
	cni      *libcni.CNIConfig
	conflist []byte
	paths    []string
	stateDir string
	netnsDir string
	// cniConfigDir is read at every cni/<name> Setup.
	cniConfigDir string
}

// PortMapping maps a host port to a port inside the namespace.
type PortMapping struct {
	Label         string
	HostPort      int
	ContainerPort int
	// HostIP limits the mapping to one host address; empty: all.
	HostIP string
}

// SetupInput is the input of Setup.
type SetupInput struct {
	AllocID string
	Ports   []PortMapping
	// CNINetwork names the network of the config dir to attach the
	// allocation to (mode cni/<name>); empty: the bridge.
	CNINetwork string
}

// Status is an allocation's network as set up.
type Status struct {
	AllocID   string
	NetnsPath string
	// Interface is the allocation's interface in the namespace.
	Interface string
	// Address is its IPv4 address on the bridge or CNI network.
	Address string
	// CNINetwork is the CNI network it is attached to; empty: the
	// bridge.
	CNINetwork string `json:",omitempty"`
	Ports      []PortMapping
	// Adopted is set when Setup found the network from an earlier agent
	// and left it as it was.
	Adopted bool `json:"-"`
}

// New checks the config and finds the plugins; it creates nothing on the
// host until Setup.
func New(cfg Config) (*Manager, error) {
	if cfg.StateDir == "" {
		return nil, errors.New("allocnet: a state dir is required")
	}
	b, err := cfg.Bridge.withDefaults()
	if err != nil {
		return nil, err
	}
	paths := cfg.CNIPath
	if len(paths) == 0 {
		paths = DefaultCNIPath
	}
	logger := cfg.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	m := &Manager{
		logger:   logger.Named("allocnet"),
		bridge:   b.Name,
		paths:    slices.Clone(paths),
		stateDir: cfg.StateDir,
		netnsDir: cfg.NetnsDir,

		cniConfigDir: cniConfigDirOf(cfg.CNIConfigDir),
	}
	if m.netnsDir == "" {
		m.netnsDir = DefaultNetnsDir
	}
	if m.conflist, err = b.conflist(filepath.Join(cfg.StateDir, "ipam")); err != nil {
		return nil, err
	}
	// An exec of our own: libcni makes its default lazily, unguarded,
	// which races when allocations start together. The plugins' stderr
	// goes to the agent's log.
	exec := &invoke.DefaultExec{RawExec: &invoke.RawExec{
		Stderr: m.logger.StandardWriter(&hclog.StandardLoggerOptions{InferLevels: true}),
	}}
	m.cni = libcni.NewCNIConfigWithCacheDir(m.paths, filepath.Join(cfg.StateDir, "cni-cache"), exec)
	return m, nil
}

// BridgeName is the host bridge allocations are attached to.
func (m *Manager) BridgeName() string { return m.bridge }

// CheckPlugins reports which of Plugins are in none of the CNI path's
// directories, wrapped in ErrPluginsMissing; nil when all are there.
func (m *Manager) CheckPlugins() error {
	var missing []string
	for _, p := range Plugins {
		if _, err := invoke.FindInPath(p, m.paths); err != nil {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s not found in cni_path %s (Debian: apt-get install containernetworking-plugins)",
			ErrPluginsMissing, strings.Join(missing, ", "), strings.Join(m.paths, ":"))
	}
	return nil
}

func (m *Manager) netnsPath(allocID string) string { return filepath.Join(m.netnsDir, allocID) }

func checkAllocID(id string) error {
	if id == "" || strings.ContainsAny(id, `/\ `) || id == "." || id == ".." || len(id) > 64 {
		return fmt.Errorf("%w: %q", ErrBadAllocID, id)
	}
	return nil
}

// Setup gives the allocation its namespace on the bridge (or on the CNI
// network it names) with its port mappings, or adopts the one an earlier
// agent made for it. A failure leaves nothing behind.
func (m *Manager) Setup(ctx context.Context, in SetupInput) (*Status, error) {
	if err := checkAllocID(in.AllocID); err != nil {
		return nil, err
	}
	rec, err := m.readRecord(in.AllocID)
	switch {
	case err == nil && rec.Status.Address != "" && netns.Exists(rec.Status.NetnsPath):
		st := rec.Status
		st.Adopted = true
		m.logger.Debug("adopted the allocation's network", "alloc_id", in.AllocID, "netns", st.NetnsPath, "address", st.Address)
		return &st, nil
	case err == nil:
		// Half made (the agent died during an ADD) or its namespace is
		// gone (a reboot emptied /var/run): undo what is left first.
		m.logger.Info("tearing down a stale network before setting it up again", "alloc_id", in.AllocID)
		if err := m.teardown(ctx, rec); err != nil {
			return nil, err
		}
	case !errors.Is(err, os.ErrNotExist):
		return nil, err
	}
	conflist, what := m.conflist, "bridge network"
	if in.CNINetwork != "" {
		what = fmt.Sprintf("CNI network %q", in.CNINetwork)
		if conflist, err = m.cniConflist(in.CNINetwork); err != nil {
			return nil, fmt.Errorf("network mode %q: %w", "cni/"+in.CNINetwork, err)
		}
	}
	rec = &record{
		Conflist: conflist,
		Status: Status{
			AllocID:    in.AllocID,
			NetnsPath:  m.netnsPath(in.AllocID),
			Interface:  IfName,
			Ports:      slices.Clone(in.Ports),
			CNINetwork: in.CNINetwork,
		},
	}
	// The record first: an agent killed from here on leaves something
	// the next one finds.
	if err := m.writeRecord(rec); err != nil {
		return nil, err
	}
	st, err := m.add(ctx, rec)
	if err != nil {
		if terr := m.teardown(ctx, rec); terr != nil {
			err = errors.Join(err, fmt.Errorf("cleaning up: %w", terr))
		}
		return nil, fmt.Errorf("setting up the allocation's %s: %w", what, err)
	}
	return st, nil
}

func (m *Manager) add(ctx context.Context, rec *record) (*Status, error) {
	if err := netns.Create(rec.Status.NetnsPath); err != nil {
		return nil, err
	}
	list, err := libcni.ConfListFromBytes(rec.Conflist)
	if err != nil {
		return nil, fmt.Errorf("CNI config: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, pluginTimeout)
	defer cancel()
	res, err := m.cni.AddNetworkList(ctx, list, runtimeConf(rec.Status))
	if err != nil {
		return nil, fmt.Errorf("CNI ADD: %w", err)
	}
	addr, err := ipv4Of(res)
	if err != nil {
		return nil, err
	}
	rec.Status.Address = addr
	if err := m.writeRecord(rec); err != nil {
		return nil, err
	}
	st := rec.Status
	return &st, nil
}

// ipv4Of returns the first IPv4 address the plugins gave the namespace.
func ipv4Of(res cnitypes.Result) (string, error) {
	r, err := current.NewResultFromResult(res)
	if err != nil {
		return "", fmt.Errorf("CNI result: %w", err)
	}
	for _, ip := range r.IPs {
		if a, ok := netip.AddrFromSlice(ip.Address.IP); ok && a.Unmap().Is4() {
			return a.Unmap().String(), nil
		}
	}
	return "", errors.New("CNI result has no IPv4 address")
}

// runtimeConf is the CNI call for st: the allocation ID is the container
// ID, which names the plugins' iptables chains and IPAM lease.
func runtimeConf(st Status) *libcni.RuntimeConf {
	pm := make([]map[string]any, 0, len(st.Ports)*2)
	for _, p := range st.Ports {
		for _, proto := range []string{"tcp", "udp"} {
			m := map[string]any{"hostPort": p.HostPort, "containerPort": p.ContainerPort, "protocol": proto}
			if p.HostIP != "" {
				m["hostIP"] = p.HostIP
			}
			pm = append(pm, m)
		}
	}
	return &libcni.RuntimeConf{
		ContainerID:    st.AllocID,
		NetNS:          st.NetnsPath,
		IfName:         st.Interface,
		CapabilityArgs: map[string]any{"portMappings": pm},
	}
}

// Teardown deletes the allocation's network: CNI DEL (which removes its
// veth, lease and iptables rules), then its namespace and record. Tearing
// down an allocation without a network does nothing.
func (m *Manager) Teardown(ctx context.Context, allocID string) error {
	if err := checkAllocID(allocID); err != nil {
		return err
	}
	rec, err := m.readRecord(allocID)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return m.teardown(ctx, rec)
}

func (m *Manager) teardown(ctx context.Context, rec *record) error {
	list, err := libcni.ConfListFromBytes(rec.Conflist)
	if err != nil {
		return fmt.Errorf("alloc %s: CNI config in its record: %w", rec.Status.AllocID, err)
	}
	rc := runtimeConf(rec.Status)
	if !netns.Exists(rec.Status.NetnsPath) {
		// The namespace is gone (a reboot freed it; on a device whose
		// netns directory is on disk its pin survives as a plain file,
		// which the plugins refuse as a namespace). The DEL runs without
		// one, as the CNI spec allows: the plugins still release the
		// lease and remove the port mappings by container ID.
		if err := netns.Remove(rec.Status.NetnsPath); err != nil {
			return err
		}
		rc.NetNS = ""
	}
	ctx, cancel := context.WithTimeout(ctx, pluginTimeout)
	defer cancel()
	if err := m.cni.DelNetworkList(ctx, list, rc); err != nil {
		// The record stays, so that the next Reap tries again.
		return fmt.Errorf("alloc %s: CNI DEL: %w", rec.Status.AllocID, err)
	}
	if err := netns.Remove(rec.Status.NetnsPath); err != nil {
		return err
	}
	m.logger.Debug("tore down the allocation's network", "alloc_id", rec.Status.AllocID)
	return m.removeRecord(rec.Status.AllocID)
}

// Reap tears down the network of every recorded allocation live does not
// report running here: those an earlier agent left behind when it was
// killed, or whose allocation was collected while it was down. It tries
// them all and returns their errors joined.
func (m *Manager) Reap(ctx context.Context, live func(allocID string) bool) error {
	ids, err := m.recordIDs()
	if err != nil {
		return err
	}
	var errs []error
	for _, id := range ids {
		if live(id) {
			continue
		}
		m.logger.Info("removing the network of an allocation this client no longer runs", "alloc_id", id)
		if err := m.Teardown(ctx, id); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
