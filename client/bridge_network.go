package client

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/nomad-edge/nomad/client/allocnet"
	"github.com/nomad-edge/nomad/client/allocrunner"
	"github.com/nomad-edge/nomad/helper/netns"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// BridgeNetworkConfig is the client's bridge_network_* and cni_* keys.
type BridgeNetworkConfig struct {
	allocnet.BridgeConfig
	// CNIPath are the directories searched for the CNI plugins; empty
	// means allocnet.DefaultCNIPath.
	CNIPath []string
	// CNIConfigDir holds the networks of cni/<name> modes; empty means
	// allocnet.DefaultCNIConfigDir.
	CNIConfigDir string
	// NetnsDir is where allocations' namespaces are pinned; empty means
	// allocnet.DefaultNetnsDir. For tests.
	NetnsDir string
}

// errSimulatedHost is why bridge mode is unavailable to a node whose host
// is not probed (Config.HostFingerprint: the simulator's nodes).
var errSimulatedHost = errors.New("a simulated node has no host network for namespaces")

// errNeedsRoot is why bridge mode is unavailable to an unprivileged agent.
var errNeedsRoot = errors.New("the agent must run as root to create network namespaces")

// setupBridgeNetwork builds the manager of bridge- and cni-mode
// allocations' namespaces, with its state beside the client's database so
// that it survives the agent. A bad bridge_network_* value fails the
// start; a host that cannot make namespaces (not root, not Linux) only
// makes those allocations fail, with the reason, and one without the
// bridge's plugins only bridge-mode ones (a cni/<name> network may use
// other plugins).
func (c *Client) setupBridgeNetwork() error {
	dir := c.cfg.StateDir
	if dir == "" {
		dir = filepath.Dir(c.cfg.AllocDir)
	}
	m, err := allocnet.New(allocnet.Config{
		Logger:   c.logger,
		Bridge:   c.cfg.Bridge.BridgeConfig,
		CNIPath:  c.cfg.Bridge.CNIPath,
		StateDir: filepath.Join(dir, "allocnet"),
		NetnsDir: c.cfg.Bridge.NetnsDir,

		CNIConfigDir: c.cfg.Bridge.CNIConfigDir,
	})
	if err != nil {
		return err
	}
	switch {
	case !netns.Supported:
		c.bridgeUnavailable = errors.New("network namespaces need Linux")
	case os.Geteuid() != 0:
		c.bridgeUnavailable = errNeedsRoot
	default:
		c.network = m
		c.bridgeUnavailable = m.CheckPlugins()
	}
	return nil
}

// reapBridgeNetworks removes the namespaces, veths and rules of
// allocations this client no longer runs: those of a killed agent whose
// allocations were collected or never made it into the state database.
// The restored allocations' networks are left untouched for their runners
// to adopt. Call it after restoreAllocs.
func (c *Client) reapBridgeNetworks() {
	if c.network == nil {
		return
	}
	if err := c.network.Reap(context.Background(), func(id string) bool {
		_, ok := c.allocs[id]
		return ok
	}); err != nil {
		c.logger.Error("failed to remove the networks of allocations gone while the agent was down; retried at the next start", "error", err)
	}
}

// allocNetwork is the manager as the alloc runners take it: a nil
// interface, not a nil pointer in one, when there is none.
func (c *Client) allocNetwork() allocrunner.NetworkManager {
	if c.network == nil {
		return nil
	}
	return c.network
}

// namespaceNetworks are the node's network modes beyond host, for the
// scheduler to place bridge- and cni-mode groups only where they work:
// bridge when its plugins are there, and one cni/<name> per network of
// cni_config_dir (upstream's shape: a NodeNetworkResource of that mode).
func (c *Client) namespaceNetworks() []*structs.NodeNetworkResource {
	if c.network == nil {
		return nil
	}
	var out []*structs.NodeNetworkResource
	if c.bridgeUnavailable == nil {
		out = append(out, &structs.NodeNetworkResource{Mode: structs.NetworkModeBridge, Device: c.network.BridgeName()})
	}
	names, err := c.network.CNINetworks()
	if err != nil {
		c.logger.Warn("cannot read cni_config_dir: no cni/<name> network mode is fingerprinted", "error", err)
	}
	for _, n := range names {
		out = append(out, &structs.NodeNetworkResource{Mode: structs.NetworkModeCNIPrefix + n})
	}
	return out
}

// fingerprintCNIPlugins sets upstream's attributes of the CNI path and
// the bridge: plugins.cni.version.<plugin> for each plugin that prints a
// version, and nomad.bridge.hairpin_mode.
func fingerprintCNIPlugins(attrs map[string]string, cfg BridgeNetworkConfig) {
	for name, v := range cniPluginVersions(cfg.CNIPath) {
		attrs["plugins.cni.version."+name] = v
	}
	attrs["nomad.bridge.hairpin_mode"] = strconv.FormatBool(cfg.HairpinMode)
}

// pluginVersionCache holds allocnet.PluginVersions by CNI path, once per
// process: the plugins change with a package upgrade, not while the agent
// runs, and a test process starts many clients.
var pluginVersionCache sync.Map

func cniPluginVersions(paths []string) map[string]string {
	key := strings.Join(paths, "\x00")
	if v, ok := pluginVersionCache.Load(key); ok {
		return v.(map[string]string)
	}
	v, _ := pluginVersionCache.LoadOrStore(key, allocnet.PluginVersions(paths))
	return v.(map[string]string)
}
