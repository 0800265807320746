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

// NetworkManager gives bridge-mode allocations their network namespace
// (client/allocnet.Manager).
type NetworkManager interface {
	Setup(ctx context.Context, in allocnet.SetupInput) (*allocnet.Status, error)
	Teardown(ctx context.Context, allocID string) error
}

// ErrBridgeUnavailable is why a bridge-mode allocation fails on a client
// that cannot set one up (no CNI plugins, or not root).
var ErrBridgeUnavailable = errors.New(`network mode "bridge" is unavailable on this client`)

// networkHook sets up the allocation's bridge network before its first
// task starts and tears it down once the allocation is done. status is
// written by setup before any task runs and only read after.
type networkHook struct {
	logger hclog.Logger
	mgr    NetworkManager
	// unavailable explains a nil mgr.
	unavailable error
	alloc       *structs.Allocation
	tasks       []*TaskRunner

	status       *allocnet.Status
	teardownOnce sync.Once
}

// bridgeWanted reports whether the allocation's group network is in
// bridge mode.
func (h *networkHook) bridgeWanted() bool {
	tg := h.alloc.LookupTaskGroup()
	if tg == nil {
		return false
	}
	_, ok := tg.BridgeNetwork()
	return ok
}

// setup gives a bridge-mode allocation its namespace, or adopts the one an
// earlier agent made; nothing for host mode. Every task's driver must be
// able to start it in the namespace: one that cannot fails the allocation
// by name rather than run a task outside the network its job asked for.
func (h *networkHook) setup() error {
	if !h.bridgeWanted() {
		return nil
	}
	for _, tr := range h.tasks {
		if tr.driver != nil && !drivers.CapabilitiesOf(tr.driver).NetNamespace {
			return fmt.Errorf("network mode %q: driver %q of task %q cannot start tasks in the allocation's network namespace",
				structs.NetworkModeBridge, tr.task.Driver, tr.task.Name)
		}
	}
	if h.mgr == nil {
		err := ErrBridgeUnavailable
		if h.unavailable != nil {
			err = fmt.Errorf("%w: %w", ErrBridgeUnavailable, h.unavailable)
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
	st, err := h.mgr.Setup(context.Background(), allocnet.SetupInput{AllocID: h.alloc.ID, Ports: ports})
	if err != nil {
		return err
	}
	h.status = st
	h.logger.Debug("allocation network ready", "netns", st.NetnsPath, "address", st.Address, "adopted", st.Adopted)
	return nil
}

// teardown removes the allocation's network, once; after Run's setup only.
func (h *networkHook) teardown() {
	if h.mgr == nil || !h.bridgeWanted() {
		return
	}
	h.teardownOnce.Do(func() {
		if err := h.mgr.Teardown(context.Background(), h.alloc.ID); err != nil {
			// Its record stays: the next agent start reaps it.
			h.logger.Error("failed to tear down the allocation's network", "error", err)
		}
	})
}
