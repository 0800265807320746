package client

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/nomad-edge/nomad/client/allocnet"
	"github.com/nomad-edge/nomad/client/allocrunner"
	"github.com/nomad-edge/nomad/helper/netns"
)

// BridgeNetworkConfig is the client's bridge_network_* and cni_path keys.
type BridgeNetworkConfig struct {
	allocnet.BridgeConfig
	// CNIPath are the directories searched for the CNI plugins; empty
	// means allocnet.DefaultCNIPath.
	CNIPath []string
	// NetnsDir is where allocations' namespaces are pinned; empty means
	// allocnet.DefaultNetnsDir. For tests.
	NetnsDir string
}

// errNeedsRoot is why bridge mode is unavailable to an unprivileged agent.
var errNeedsRoot = errors.New("the agent must run as root to create network namespaces")

// setupBridgeNetwork builds the manager of bridge-mode allocations'
// namespaces, with its state beside the client's database so that it
// survives the agent. A bad bridge_network_* value fails the start; a
// host that cannot do bridge mode (not root, not Linux, plugins missing)
// only makes bridge-mode allocations fail, with the reason.
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
		c.bridgeUnavailable = m.CheckPlugins()
	}
	if c.bridgeUnavailable == nil {
		c.network = m
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
