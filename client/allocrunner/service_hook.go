package allocrunner

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nomad-edge/nomad/helper/clock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// ServiceRegistrar writes an allocation's instances to the servers'
// catalog (ServiceRegistration.Upsert and DeleteByID, with the node's
// secret). Both calls may block on the network; an error is retried.
type ServiceRegistrar interface {
	UpsertServices(regs []*structs.ServiceRegistration) error
	DeleteServices(ids []string) error
}

// Retry delays of the service hook: doubling from the first to the last.
const (
	serviceRetryMin = time.Second
	serviceRetryMax = 30 * time.Second
)

// serviceHook registers the allocation's services (provider "nomad") once
// its tasks run, and deregisters them when the allocation stops: at the
// servers' stop, before the group's shutdown_delay so that consumers stop
// sending traffic while the tasks drain, as upstream; or when the tasks
// end. It is level-triggered: observe and deregister set what should be
// registered, and one goroutine converges the catalog to it, retrying
// with backoff while the servers cannot be reached. Registering what is
// already registered writes nothing on the servers, so a retry is cheap.
//
// While the node is cut off nothing needs to happen here: the servers mark
// the instances unknown with the allocation, and active again when the
// client reports it (see nomad/state's syncServicesWithAllocTxn).
type serviceHook struct {
	logger hclog.Logger
	clock  clock.Clock
	reg    ServiceRegistrar
	node   NodeInfo
	ad     *AllocDir
	// nsAddr is the allocation's address in its network namespace, ""
	// without one (networkHook.address).
	nsAddr func() string

	mu      sync.Mutex
	want    []*structs.ServiceRegistration // nil: nothing registered
	stopped bool                           // deregistered for good
	started bool
	kick    chan struct{}
	done    chan struct{} // closed by shutdown
	once    sync.Once
}

func newServiceHook(logger hclog.Logger, clk clock.Clock, reg ServiceRegistrar, node NodeInfo, ad *AllocDir, nsAddr func() string) *serviceHook {
	return &serviceHook{
		logger: logger.Named("services"), clock: clk, reg: reg, node: node, ad: ad, nsAddr: nsAddr,
		kick: make(chan struct{}, 1), done: make(chan struct{}),
	}
}

// observe is told the allocation and its client status after every
// change: running registers (or updates) its services, a terminal status
// deregisters them.
func (h *serviceHook) observe(alloc *structs.Allocation, status string) {
	if h == nil || h.reg == nil {
		return
	}
	switch {
	case structs.ClientTerminal(status) || alloc.ServerTerminalStatus():
		h.deregister()
	case status == structs.AllocClientStatusRunning:
		regs := buildRegistrations(alloc, h.node, h.ad, h.nsAddr())
		if len(regs) == 0 {
			return
		}
		h.set(func() {
			if !h.stopped && !slices.EqualFunc(h.want, regs, (*structs.ServiceRegistration).Equal) {
				h.want = regs
			}
		})
	}
}

// deregister removes the allocation's instances from the catalog, for
// good: a stopped allocation never registers again.
func (h *serviceHook) deregister() {
	if h == nil || h.reg == nil {
		return
	}
	h.set(func() { h.stopped = true })
}

// shutdown stops the hook's goroutine and leaves the catalog as it is:
// the client is going away, not the tasks.
func (h *serviceHook) shutdown() {
	if h == nil {
		return
	}
	h.once.Do(func() { close(h.done) })
}

// set changes what should be registered under the lock, and starts or
// wakes the goroutine that makes it so.
func (h *serviceHook) set(change func()) {
	h.mu.Lock()
	change()
	start := !h.started && (h.want != nil || h.stopped)
	h.started = h.started || start
	h.mu.Unlock()
	if start {
		go h.run()
	}
	select {
	case h.kick <- struct{}{}:
	default:
	}
}

// run converges the catalog to what set asked for, until deregistered or
// shut down.
func (h *serviceHook) run() {
	var have []*structs.ServiceRegistration
	delay := serviceRetryMin
	for {
		h.mu.Lock()
		want, stopped := h.want, h.stopped
		h.mu.Unlock()

		var err error
		switch {
		case stopped && have == nil && want == nil:
			return
		case stopped:
			ids := registrationIDs(have, want)
			if err = h.reg.DeleteServices(ids); err == nil {
				h.logger.Debug("deregistered services", "ids", ids)
				return
			}
		case !slices.EqualFunc(have, want, (*structs.ServiceRegistration).Equal):
			if err = h.reg.UpsertServices(want); err == nil {
				h.logger.Debug("registered services", "count", len(want))
				have, delay = want, serviceRetryMin
				continue
			}
		}
		wait := h.kick
		if err != nil {
			h.logger.Warn("service catalog update failed, will retry", "error", err, "retry_in", delay)
			if !clock.Sleep(h.clock, delay, h.done) {
				return
			}
			delay = min(2*delay, serviceRetryMax)
			continue
		}
		select {
		case <-wait:
		case <-h.done:
			return
		}
	}
}

// registrationIDs is every ID of either list, once.
func registrationIDs(lists ...[]*structs.ServiceRegistration) []string {
	var ids []string
	for _, l := range lists {
		for _, r := range l {
			if !slices.Contains(ids, r.ID) {
				ids = append(ids, r.ID)
			}
		}
	}
	return ids
}

// ServiceRegistrationID is an instance's ID, upstream's form:
// _nomad-task-<alloc>-<task, or group-<group>>-<service>-<port label>.
func ServiceRegistrationID(allocID, owner string, s *structs.Service) string {
	return fmt.Sprintf("_nomad-task-%s-%s-%s-%s", allocID, owner, s.Name, s.PortLabel)
}

// buildRegistrations returns the allocation's instances: its group's
// services and its tasks', with provider "nomad", the name, tags and
// meta interpolated in the task's environment (a group service in its
// first task's), and the host address and port of the service's port.
func buildRegistrations(alloc *structs.Allocation, node NodeInfo, ad *AllocDir, nsAddr string) []*structs.ServiceRegistration {
	tg := alloc.LookupTaskGroup()
	if tg == nil || len(tg.Tasks) == 0 {
		return nil
	}
	var out []*structs.ServiceRegistration
	add := func(owner string, task *structs.Task, s *structs.Service) {
		if s == nil || (s.Provider != "" && s.Provider != structs.ServiceProviderNomad) {
			return
		}
		vars := node.vars()
		maps.Copy(vars, buildEnv(envInput{alloc: alloc, task: task, allocDir: ad, taskDir: ad.TaskDir(task.Name), node: node}))
		if owner != task.Name {
			delete(vars, "NOMAD_TASK_NAME") // a group service has no task
		}
		named := *s
		named.Name = interpolate(s.Name, vars)
		addr, port := serviceAddress(alloc, node, s, nsAddr)
		tags := s.Tags
		if alloc.DeploymentStatus != nil && alloc.DeploymentStatus.Canary && len(s.CanaryTags) > 0 {
			tags = s.CanaryTags
		}
		r := &structs.ServiceRegistration{
			ID:          ServiceRegistrationID(alloc.ID, owner, &named),
			ServiceName: named.Name,
			Namespace:   alloc.Namespace,
			NodeID:      alloc.NodeID,
			Datacenter:  node.Datacenter,
			JobID:       alloc.JobID,
			AllocID:     alloc.ID,
			Address:     addr,
			Port:        port,
		}
		for _, t := range tags {
			r.Tags = append(r.Tags, interpolate(t, vars))
		}
		out = append(out, r)
	}
	for _, s := range tg.Services {
		add("group-"+tg.Name, tg.Tasks[0], s)
	}
	for _, t := range tg.Tasks {
		for _, s := range t.Services {
			add(t.Name, t, s)
		}
	}
	slices.SortFunc(out, func(a, b *structs.ServiceRegistration) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// serviceAddress is where a service is reached: its port label's host IP
// and port, or a port number on the node's address; in address_mode
// "alloc", the allocation's own address inside its network namespace
// (nsAddr, bridge and cni modes; "" without one) and the port the task
// listens on there (the `to` port, when the port maps one). `address`
// overrides the IP.
func serviceAddress(alloc *structs.Allocation, node NodeInfo, s *structs.Service, nsAddr string) (string, int) {
	addr, port := node.Attributes[structs.NodeAttrNetworkIP], 0
	if i := slices.IndexFunc(allocPorts(alloc), func(p structs.AllocatedPortMapping) bool { return p.Label == s.PortLabel }); i >= 0 {
		p := allocPorts(alloc)[i]
		addr, port = p.HostIP, p.Value
		if s.AddressMode == structs.AddressModeAlloc && p.To > 0 {
			port = p.To
		}
	} else if n, err := strconv.Atoi(s.PortLabel); err == nil {
		port = n
	}
	if s.AddressMode == structs.AddressModeAlloc && nsAddr != "" {
		addr = nsAddr
	}
	if s.Address != "" {
		addr = s.Address
	}
	return addr, port
}
