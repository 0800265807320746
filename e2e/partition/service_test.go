package partition

import (
	"fmt"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/e2e/internal/harness"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// serviceStub is a registration as GET /v1/service/:name returns it.
type serviceStub struct {
	ID, AllocID, NodeID, Status string
	Port                        int
	CreateIndex                 uint64
}

func (e *edge) instances(includeUnknown bool) []serviceStub {
	var list []serviceStub
	path := "/v1/service/edge-svc"
	if includeUnknown {
		path += "?include_unknown=true"
	}
	_ = e.server.GetJSON(path, &list)
	return list
}

func describeInstances(list []serviceStub) string {
	s := fmt.Sprintf("%d:", len(list))
	for _, r := range list {
		s += fmt.Sprintf(" [alloc=%.8s %s idx=%d]", r.AllocID, r.Status, r.CreateIndex)
	}
	return s
}

// The catalog across a real partition (issue 20, item 6): a service
// instance whose client's link goes down is marked unknown and leaves the
// default GET /v1/service/:name in the same write that makes its
// allocation unknown (never seen unknown while still listed), the
// replacement placed on the other client is listed instead; on heal the
// original instance is active again with the same CreateIndex, its task
// never restarted, and the stopped replacement's instance is removed.
func TestPartition_ServiceInstanceOfCutClient(t *testing.T) {
	e := newEdge(t, edgeOptions{fault: harness.LinkDown})
	cm2 := e.fab.Add("client2", 30)
	client2 := e.agents.Add(harness.AgentConfig{
		Name: "client2", IP: cm2.IP, Netns: cm2.NS, NetOnly: true,
		Ports: harness.Ports{HTTP: 4646},
		Args: []string{"-client", "-servers", e.server.RPCAddr(), "-bind", cm2.IP,
			"-node", "edge-ns2", "-data-dir", harness.DataDirVar},
	})
	client2.Start()
	nodes := map[string]string{} // node ID → fabric member (the dev server runs a node too)
	wait.Poll(t, 30*time.Second, "both nodes ready", func() (bool, string) {
		var list []nodeStub
		if err := e.server.GetJSON("/v1/nodes", &list); err != nil {
			return false, err.Error()
		}
		for _, nd := range list {
			if nd.Status == "ready" && nd.Name == "edge-ns" {
				nodes[nd.ID] = "client"
			}
			if nd.Status == "ready" && nd.Name == "edge-ns2" {
				nodes[nd.ID] = "client2"
			}
		}
		return len(nodes) == 2, fmt.Sprintf("%+v", list)
	})

	e.runJob(`
job "edge" {
  datacenters = ["dc1"]
  constraint {
    attribute = "${node.unique.name}"
    operator  = "regexp"
    value     = "^edge-ns"
  }
  group "app" {
    disconnect {
      lost_after = "1h"
      replace    = true
      reconcile  = "keep_original"
    }
    reschedule {
      delay          = "1s"
      delay_function = "constant"
      unlimited      = true
    }
    network {
      port "http" {}
    }
    service {
      name = "edge-svc"
      port = "http"
    }
` + mockTask + `
  }
}
`)
	var orig serviceStub
	wait.Poll(t, 30*time.Second, "the allocation running and its instance registered", func() (bool, string) {
		list, regs := e.allocs(), e.instances(false)
		if len(list) == 1 && list[0].ClientStatus == "running" && len(regs) == 1 && regs[0].AllocID == list[0].ID {
			e.alloc, orig = list[0], regs[0]
			return true, ""
		}
		return false, fmt.Sprintf("%+v; %s", list, describeInstances(regs))
	})
	must.Eq(t, "active", orig.Status)
	cut := nodes[e.alloc.NodeID]
	must.NotEq(t, "", cut, must.Sprintf("allocation %+v, nodes %v", e.alloc, nodes))
	t.Logf("the allocation runs on %s; cutting its link", cut)

	heal := e.fab.Apply(cut, harness.LinkDown)
	cutAt := time.Now()
	var unknownAt, leftAt time.Duration
	wait.Poll(t, 60*time.Second, "original unknown and out of the lookup, the replacement's instance in", func() (bool, string) {
		var original allocStub
		for _, a := range e.allocs() {
			if a.ID == e.alloc.ID {
				original = a
			}
		}
		def, all := e.instances(false), e.instances(true)
		for _, r := range def {
			// Read after the allocation: the marking is the same write.
			must.False(t, original.ClientStatus == "unknown" && r.AllocID == e.alloc.ID,
				must.Sprintf("an unknown allocation's instance is still listed: %s", describeInstances(def)))
		}
		if original.ClientStatus == "unknown" && unknownAt == 0 {
			unknownAt = time.Since(cutAt)
		}
		listed := false
		for _, r := range def {
			listed = listed || r.AllocID == e.alloc.ID
		}
		if !listed && leftAt == 0 {
			leftAt = time.Since(cutAt)
		}
		origUnknown := false
		for _, r := range all {
			origUnknown = origUnknown || (r.AllocID == e.alloc.ID && r.Status == "unknown")
		}
		ok := origUnknown && len(def) == 1 && def[0].AllocID != e.alloc.ID && def[0].Status == "active"
		return ok, fmt.Sprintf("original %s; default %s; all %s", original.ClientStatus, describeInstances(def), describeInstances(all))
	})
	t.Logf("after the cut: the original's instance out of the default lookup %v, its allocation unknown %v, the replacement's instance in %v (after the 1s reschedule delay)",
		leftAt.Round(time.Millisecond), unknownAt.Round(time.Millisecond), time.Since(cutAt).Round(time.Millisecond))

	heal()
	healed := time.Now()
	wait.Poll(t, 60*time.Second, "the original active again, the replacement's instance removed", func() (bool, string) {
		def, all := e.instances(false), e.instances(true)
		ok := len(all) == 1 && len(def) == 1 && def[0].AllocID == e.alloc.ID && def[0].Status == "active"
		return ok, "default " + describeInstances(def) + "; all " + describeInstances(all)
	})
	t.Logf("the original's instance active again and the replacement's removed %v after the heal", time.Since(healed).Round(time.Millisecond))
	back := e.instances(false)[0]
	must.Eq(t, orig.ID, back.ID)
	must.Eq(t, orig.CreateIndex, back.CreateIndex, must.Sprint("the same registration, not a new one"))
	for _, a := range e.allocs() {
		if a.ID == e.alloc.ID {
			must.Eq(t, "running", a.ClientStatus)
			must.Eq(t, uint64(0), a.TaskStates["app"].Restarts, must.Sprint("the task was not restarted"))
			must.Eq(t, e.alloc.TaskStates["app"].StartedAt, a.TaskStates["app"].StartedAt)
		}
	}
}
