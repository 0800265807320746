package allocrunner

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/clienttest"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// fakeRegistrar records the catalog calls and fails the first failUpserts
// upserts, as servers out of reach do.
type fakeRegistrar struct {
	mu          sync.Mutex
	failUpserts int
	upserts     [][]*structs.ServiceRegistration
	deletes     [][]string
}

func (f *fakeRegistrar) UpsertServices(regs []*structs.ServiceRegistration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failUpserts > 0 {
		f.failUpserts--
		return errors.New("no servers")
	}
	f.upserts = append(f.upserts, regs)
	return nil
}

func (f *fakeRegistrar) DeleteServices(ids []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deletes = append(f.deletes, slices.Clone(ids))
	return nil
}

func (f *fakeRegistrar) calls() (int, [][]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.upserts), slices.Clone(f.deletes)
}

// serviceAlloc is a mock allocation whose group has a service on port
// label http (host port 25000) and whose task has one on port 9000.
func serviceAlloc(cfg map[string]any) *structs.Allocation {
	a := clienttest.MockAlloc("node-1", cfg)
	tg := a.Job.TaskGroups[0]
	tg.Networks = []*structs.NetworkResource{{DynamicPorts: []structs.Port{{Label: "http"}}}}
	tg.Services = []*structs.Service{{Name: "${NOMAD_JOB_NAME}-${NOMAD_GROUP_NAME}", PortLabel: "http",
		Tags: []string{"v1"}, CanaryTags: []string{"canary"}, Provider: structs.ServiceProviderNomad}}
	tg.Tasks[0].Services = []*structs.Service{{Name: "${NOMAD_TASK_NAME}-admin", PortLabel: "9000",
		Tags: []string{"${NOMAD_ALLOC_INDEX}"}, Provider: structs.ServiceProviderNomad}}
	a.AllocatedResources.Shared.Ports = structs.AllocatedPorts{{Label: "http", Value: 25000, HostIP: "10.1.1.1"}}
	return a
}

func serviceRunner(t *testing.T, h *harness, a *structs.Allocation, reg ServiceRegistrar) *AllocRunner {
	t.Helper()
	must.NoError(t, h.db.PutAllocations(a))
	ar, err := NewAllocRunner(Config{
		Logger:       clienttest.Logger(),
		Alloc:        a,
		AllocDirRoot: h.root,
		Node: NodeInfo{ID: "node-1", Name: "n1", Datacenter: "dc1", Region: "global",
			Attributes: map[string]string{structs.NodeAttrNetworkIP: "10.1.1.2"}},
		StateDB:      h.db,
		Drivers:      h.drivers,
		StateUpdater: h.rec,
		Services:     reg,
	})
	must.NoError(t, err)
	return ar
}

// TestBuildRegistrations checks what a running allocation advertises:
// names and tags interpolated in the task's environment (a group service
// has no task name), the group port's host address, a numeric port on the
// node's address, upstream's IDs, and canary_tags while a canary.
func TestBuildRegistrations(t *testing.T) {
	a := serviceAlloc(map[string]any{"run_for": "1h"})
	ad := NewAllocDir(t.TempDir(), a.ID)
	node := NodeInfo{ID: "node-1", Datacenter: "dc1", Attributes: map[string]string{structs.NodeAttrNetworkIP: "10.1.1.2"}}
	regs := buildRegistrations(a, node, ad, "")
	must.Len(t, 2, regs)
	byName := map[string]*structs.ServiceRegistration{}
	for _, r := range regs {
		byName[r.ServiceName] = r
	}
	group := byName["my-job-web"]
	must.NotNil(t, group)
	must.Eq(t, "_nomad-task-"+a.ID+"-group-web-my-job-web-http", group.ID)
	must.Eq(t, "10.1.1.1", group.Address)
	must.Eq(t, 25000, group.Port)
	must.Eq(t, []string{"v1"}, group.Tags)
	must.Eq(t, "dc1", group.Datacenter)
	task := byName["web-admin"]
	must.NotNil(t, task)
	must.Eq(t, "10.1.1.2", task.Address)
	must.Eq(t, 9000, task.Port)
	must.Eq(t, []string{"0"}, task.Tags)

	a.DeploymentStatus = &structs.AllocDeploymentStatus{Canary: true}
	for _, r := range buildRegistrations(a, node, ad, "") {
		if r.ServiceName == "my-job-web" {
			must.Eq(t, []string{"canary"}, r.Tags)
		}
	}
}

// TestBuildRegistrations_AllocAddressMode checks that a service with
// address_mode "alloc" of a bridge or cni allocation advertises the
// allocation's own address in its namespace and the port the task listens
// on there (the `to` port), and a numeric port as it is; the default mode
// keeps the host's address and port (the mapping), as upstream.
func TestBuildRegistrations_AllocAddressMode(t *testing.T) {
	a := serviceAlloc(map[string]any{"run_for": "1h"})
	a.AllocatedResources.Shared.Ports[0].To = 8080
	tg := a.LookupTaskGroup()
	tg.Services[0].AddressMode = structs.AddressModeAlloc
	tg.Tasks[0].Services[0].AddressMode = structs.AddressModeAlloc
	ad := NewAllocDir(t.TempDir(), a.ID)
	node := NodeInfo{ID: "node-1", Datacenter: "dc1", Attributes: map[string]string{structs.NodeAttrNetworkIP: "10.1.1.2"}}
	byName := map[string]*structs.ServiceRegistration{}
	for _, r := range buildRegistrations(a, node, ad, "172.26.64.9") {
		byName[r.ServiceName] = r
	}
	must.Eq(t, "172.26.64.9", byName["my-job-web"].Address)
	must.Eq(t, 8080, byName["my-job-web"].Port)
	must.Eq(t, "172.26.64.9", byName["web-admin"].Address)
	must.Eq(t, 9000, byName["web-admin"].Port)

	tg.Services[0].AddressMode = ""
	for _, r := range buildRegistrations(a, node, ad, "172.26.64.9") {
		if r.ServiceName == "my-job-web" {
			must.Eq(t, "10.1.1.1", r.Address)
			must.Eq(t, 25000, r.Port)
		}
	}
}

// TestServiceHook_RegistersRetriesAndDeregisters checks the hook's life:
// nothing is registered before the tasks run, a failed upsert is retried
// with backoff on the injected clock until the servers answer, and the
// instances are deregistered once the allocation fails.
func TestServiceHook_RegistersRetriesAndDeregisters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		reg := &fakeRegistrar{failUpserts: 2}
		a := serviceAlloc(map[string]any{"run_for": "1m"})
		ar := serviceRunner(t, h, a, reg)
		go ar.Run()
		defer ar.Destroy()

		h.rec.waitStatus(t, a.ID, structs.AllocClientStatusRunning)
		synctest.Wait()
		n, _ := reg.calls()
		must.Eq(t, 0, n, must.Sprint("the first two attempts fail"))
		time.Sleep(serviceRetryMin + 2*serviceRetryMin)
		synctest.Wait()
		n, dels := reg.calls()
		must.Eq(t, 1, n)
		must.SliceEmpty(t, dels)

		// A service task that exits is restarted until its policy gives
		// up; then the allocation fails and its instances go.
		h.rec.waitStatus(t, a.ID, structs.AllocClientStatusFailed)
		synctest.Wait()
		_, dels = reg.calls()
		must.Len(t, 1, dels)
		must.Len(t, 2, dels[0])
	})
}

// TestServiceHook_DeregistersBeforeShutdownDelay checks upstream's order
// at a server stop: the instances leave the catalog first, and the tasks
// are killed only after the group's shutdown_delay, so consumers stop
// sending traffic to an instance that is about to go.
func TestServiceHook_DeregistersBeforeShutdownDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		reg := &fakeRegistrar{}
		a := serviceAlloc(map[string]any{"run_for": "1h"})
		a.Job.TaskGroups[0].ShutdownDelay = new(30 * time.Second)
		ar := serviceRunner(t, h, a, reg)
		go ar.Run()
		defer ar.Destroy()
		h.rec.waitStatus(t, a.ID, structs.AllocClientStatusRunning)
		synctest.Wait()

		stop := a.Copy()
		stop.DesiredStatus = structs.AllocDesiredStatusStop
		ar.Update(stop)
		synctest.Wait()
		_, dels := reg.calls()
		must.Len(t, 1, dels)
		must.Eq(t, structs.AllocClientStatusRunning, ar.ClientStatus(), must.Sprint("the tasks still run through the delay"))
		time.Sleep(30 * time.Second)
		h.rec.waitStatus(t, a.ID, structs.AllocClientStatusComplete)
	})
}

// TestServiceHook_InPlaceUpdateReregisters checks that a new job version
// applied in place (the scheduler does not replace an allocation for a
// service change) reaches the catalog: the changed tags are registered
// without a restart of the task.
func TestServiceHook_InPlaceUpdateReregisters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		reg := &fakeRegistrar{}
		a := serviceAlloc(map[string]any{"run_for": "1h"})
		ar := serviceRunner(t, h, a, reg)
		go ar.Run()
		defer ar.Destroy()
		h.rec.waitStatus(t, a.ID, structs.AllocClientStatusRunning)
		synctest.Wait()
		n, _ := reg.calls()
		must.Eq(t, 1, n)

		next := a.Copy()
		next.Job = a.Job.Copy()
		next.Job.Version++
		next.Job.TaskGroups[0].Services[0].Tags = []string{"v2"}
		next.AllocModifyIndex++
		ar.Update(next)
		synctest.Wait()
		reg.mu.Lock()
		last := reg.upserts[len(reg.upserts)-1]
		count := len(reg.upserts)
		reg.mu.Unlock()
		must.Eq(t, 2, count)
		var tags []string
		for _, r := range last {
			if r.ServiceName == "my-job-web" {
				tags = r.Tags
			}
		}
		must.Eq(t, []string{"v2"}, tags)
		must.Eq(t, uint64(0), ar.Alloc().TaskStates["web"].Restarts)
	})
}
