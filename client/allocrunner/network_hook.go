package allocrunner

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/nomad-edge/nomad/client/allocnet"
	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// NetworkManager gives bridge- and cni-mode allocations their network
// namespace (client/allocnet.Manager).
type NetworkManager interface {
	Setup(ctx context.Context, in allocnet.SetupInput) (*allocnet.Status, error)
	Teardown(ctx context.Context, allocID string) error
}

// ErrBridgeUnavailable is why a bridge-mode allocation fails on a client
// that cannot set one up (no CNI plugins, or not root).
var ErrBridgeUnavailable = errors.New(`network mode "bridge" is unavailable on this client`)

// ErrNamespaceUnavailable is why a cni-mode allocation fails on a client
// that cannot make network namespaces (not root, not Linux).
var ErrNamespaceUnavailable = errors.New("network namespaces are unavailable on this client")

// networkHook sets up the allocation's bridge or CNI network before its
// first task starts and tears it down once the allocation is done. status
// is written by setup before any task runs and only read after.
type networkHook struct {
	logger hclog.Logger
	mgr    NetworkManager
	// unavailable explains a nil mgr, or why a non-nil one cannot do
	// bridge mode.
	unavailable error
	alloc       *structs.Allocation
	tasks       []*TaskRunner
	// allocDir is the allocation's directory, where the resolv.conf and
	// hosts files of network.dns and network.hostname are written.
	allocDir string
	// node is the node's, for network.hostname's interpolation.
	node NodeInfo

	status *allocnet.Status
	// resolvConf and hosts are those files, once written; empty: none.
	resolvConf, hosts string
	// hostname is network.hostname once its hosts file is written.
	hostname string

	teardownOnce sync.Once
}

// wanted returns the allocation's group network when it is in bridge or
// cni mode.
func (h *networkHook) wanted() (*structs.NetworkResource, bool) {
	tg := h.alloc.LookupTaskGroup()
	if tg == nil {
		return nil, false
	}
	return tg.NamespaceNetwork()
}

// setup gives a bridge- or cni-mode allocation its namespace, or adopts
// the one an earlier agent made; nothing for host mode. Every task's driver must be
// able to start it in the namespace: one that cannot fails the allocation
// by name rather than run a task outside the network its job asked for.
func (h *networkHook) setup() error {
	tg := h.alloc.LookupTaskGroup()
	if tg == nil {
		return nil
	}
	group := tg.GroupNetwork()
	if err := h.checkNetworkFiles(group); err != nil {
		return err
	}
	if err := h.setupNamespace(); err != nil {
		return err
	}
	return h.writeNetworkFiles(group)
}

// setupNamespace is setup's part for bridge and cni modes.
func (h *networkHook) setupNamespace() error {
	nw, ok := h.wanted()
	if !ok {
		return nil
	}
	for _, tr := range h.tasks {
		if tr.driver != nil && !drivers.CapabilitiesOf(tr.driver).NetNamespace {
			return fmt.Errorf("network mode %q: driver %q of task %q cannot start tasks in the allocation's network namespace",
				nw.Mode, tr.task.Driver, tr.task.Name)
		}
	}
	cniName, _ := nw.CNIName()
	if h.mgr == nil || (cniName == "" && h.unavailable != nil) {
		err := ErrBridgeUnavailable
		if cniName != "" {
			err = fmt.Errorf("network mode %q: %w", nw.Mode, ErrNamespaceUnavailable)
		}
		if h.unavailable != nil {
			err = fmt.Errorf("%w: %w", err, h.unavailable)
		}
		return err
	}
	var ports []allocnet.PortMapping
	for _, p := range allocPorts(h.alloc) {
		to := p.To
		if to <= 0 {
			to = p.Value
		}
		ports = append(ports, allocnet.PortMapping{Label: p.Label, HostPort: p.Value, ContainerPort: to, HostIP: p.HostIP})
	}
	st, err := h.mgr.Setup(context.Background(), allocnet.SetupInput{AllocID: h.alloc.ID, Ports: ports, CNINetwork: cniName})
	if err != nil {
		return err
	}
	h.status = st
	h.logger.Debug("allocation network ready", "netns", st.NetnsPath, "address", st.Address, "adopted", st.Adopted)
	return nil
}

// address is the allocation's address inside its network namespace, ""
// before setup or without a namespace (host networking).
func (h *networkHook) address() string {
	if h == nil || h.status == nil {
		return ""
	}
	return h.status.Address
}

// teardown removes the allocation's network, once; after Run's setup only.
func (h *networkHook) teardown() {
	if _, ok := h.wanted(); h.mgr == nil || !ok {
		return
	}
	h.teardownOnce.Do(func() {
		if err := h.mgr.Teardown(context.Background(), h.alloc.ID); err != nil {
			// Its record stays: the next agent start reaps it.
			h.logger.Error("failed to tear down the allocation's network", "error", err)
		}
	})
}
