package testutil_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil"
	"github.com/nomad-edge/nomad/testutil/fault"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// lookup is GET /v1/service/:name as a consumer makes it, through the
// leader's RPC.
func lookup(t *testing.T, s *nomad.Server, name string, includeUnknown bool) []*structs.ServiceRegistration {
	t.Helper()
	var resp structs.ServiceRegistrationByNameResponse
	must.NoError(t, s.RPC("ServiceRegistration.GetService", &structs.ServiceRegistrationByNameRequest{
		ServiceName: name, IncludeUnknown: includeUnknown}, &resp))
	return resp.Services
}

func describeRegs(regs []*structs.ServiceRegistration) string {
	s := fmt.Sprintf("%d: ", len(regs))
	for _, r := range regs {
		s += fmt.Sprintf("[alloc=%s %s idx=%d/%d] ", r.AllocID[:8], r.Status, r.CreateIndex, r.ModifyIndex)
	}
	return s
}

// The catalog across a partition (issue 20, item 5): the instance of a
// cut-off client is marked unknown and leaves the default lookup within
// the disconnect detection time (TTL and grace, as the allocation turns
// unknown), while the replacement registers as usual; on heal the original
// instance is active again without registering anew (same CreateIndex),
// its task never restarted, and the stopped replacement's instance goes.
func TestCluster_ServiceInstanceOfCutNode_MarkedAndBack(t *testing.T) {
	testutil.Bubble(t, func(t *testing.T) {
		c := twoClients(t)
		st := c.Leader().State
		job := disconnectJob()
		job.TaskGroups[0].Services = []*structs.Service{{Name: "edge-svc", PortLabel: "8080"}}
		job.Canonicalize()
		original, cut := runOne(t, c, job)
		startedAt := original.TaskStates["app"].StartedAt

		var registered *structs.ServiceRegistration
		wait.Eventually(t, time.Minute, "the original's instance registered", func() (bool, string) {
			regs := lookup(t, c.Leader(), "edge-svc", false)
			if len(regs) == 1 && regs[0].AllocID == original.ID {
				registered = regs[0]
				return true, ""
			}
			return false, describeRegs(regs)
		})
		must.Eq(t, 8080, registered.Port)

		cutAt := time.Now()
		c.Links[cut].Cut(fault.Blackhole)
		var markedAt time.Time
		wait.Eventually(t, 2*time.Minute, "original's instance unknown and out of the default lookup; replacement's in", func() (bool, string) {
			all := lookup(t, c.Leader(), "edge-svc", true)
			def := lookup(t, c.Leader(), "edge-svc", false)
			var origUnknown bool
			for _, r := range all {
				origUnknown = origUnknown || (r.AllocID == original.ID && r.Status == structs.ServiceRegistrationStatusUnknown)
			}
			if origUnknown && markedAt.IsZero() {
				markedAt = time.Now()
			}
			ok := origUnknown && len(def) == 1 && def[0].AllocID != original.ID
			return ok, "all " + describeRegs(all) + "; default " + describeRegs(def)
		})
		since, ok := mustAlloc(t, st(), original.ID).UnknownSince()
		must.True(t, ok)
		must.LessEq(t, time.Second, markedAt.Sub(since), must.Sprint("marked as the allocation turned unknown"))
		t.Logf("instance marked unknown %v after the cut (allocation unknown after %v)", markedAt.Sub(cutAt), since.Sub(cutAt))

		c.Links[cut].Heal()
		wait.Eventually(t, 2*time.Minute, "original active again, replacement's instance gone", func() (bool, string) {
			def := lookup(t, c.Leader(), "edge-svc", false)
			all := lookup(t, c.Leader(), "edge-svc", true)
			ok := len(all) == 1 && len(def) == 1 && def[0].AllocID == original.ID &&
				def[0].Status == structs.ServiceRegistrationStatusActive
			return ok, "all " + describeRegs(all)
		})
		back := lookup(t, c.Leader(), "edge-svc", false)[0]
		must.Eq(t, registered.CreateIndex, back.CreateIndex, must.Sprint("the same registration, not a new one"))
		ts := mustAlloc(t, st(), original.ID).TaskStates["app"]
		must.Eq(t, uint64(0), ts.Restarts)
		must.Eq(t, startedAt, ts.StartedAt)
	})
}
