package testutil_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil"
	"github.com/nomad-edge/nomad/testutil/fault"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// Template lookups of services across a partition (issue 20, item 5): a
// consumer's `{{ range nomadService "edge-svc" }}` lists the instance of
// a running allocation, leaves it out while its node is cut off (its
// instance unknown) and lists the replacement instead, then goes back to
// the original on heal when the replacement's instance is removed; the
// consumer's task is never restarted (change_mode noop).
func TestMemCluster_TemplateServiceLookupLeavesOutUnknown(t *testing.T) {
	testutil.Bubble(t, func(t *testing.T) {
		allocRoots := map[int]string{}
		c := testutil.NewMemCluster(t, testutil.MemClusterConfig{Servers: 1, Clients: 3,
			Client: func(i int, cc *client.Config) { allocRoots[i] = cc.AllocDir }})
		job := disconnectJob()
		job.TaskGroups[0].Services = []*structs.Service{{Name: "edge-svc", PortLabel: "8080"}}
		job.Canonicalize()
		original, cut := runOne(t, c, job)

		consumer := disconnectJob()
		consumer.ID = "consumer"
		consumer.Constraints = []*structs.Constraint{{LTarget: "${node.unique.id}", RTarget: original.NodeID, Operand: "!="}}
		consumer.TaskGroups[0].Tasks[0].Templates = []*structs.Template{{
			EmbeddedTmpl: `{{ range nomadService "edge-svc" }}{{ .AllocID }}:{{ .Port }} {{ end }}`,
			DestPath:     "local/upstreams.txt", ChangeMode: structs.TemplateChangeModeNoop,
		}}
		consumer.Canonicalize()
		calloc, ci := runOne(t, c, consumer)
		must.NotEq(t, cut, ci)
		file := filepath.Join(allocRoots[ci], calloc.ID, "app", "local", "upstreams.txt")
		read := func() string {
			b, _ := os.ReadFile(file)
			return string(b)
		}
		wait.Eventually(t, time.Minute, "the original's instance rendered", func() (bool, string) {
			return read() == original.ID+":8080 ", read()
		})

		c.Links[cut].Cut(fault.Blackhole)
		wait.Eventually(t, 2*time.Minute, "the unknown instance left out, the replacement's in", func() (bool, string) {
			all := lookup(t, c.Leader(), "edge-svc", true)
			var replacement string
			for _, r := range all {
				if r.AllocID != original.ID && r.Status == structs.ServiceRegistrationStatusActive {
					replacement = r.AllocID
				}
			}
			return replacement != "" && read() == replacement+":8080 ", read() + " / " + describeRegs(all)
		})

		c.Links[cut].Heal()
		wait.Eventually(t, 2*time.Minute, "back to the original's instance", func() (bool, string) {
			return read() == original.ID+":8080 ", read()
		})
		must.Eq(t, uint64(0), clientAlloc(t, c, ci, calloc.ID).TaskStates["app"].Restarts)
	})
}
