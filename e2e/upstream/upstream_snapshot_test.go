package upstream

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/e2e/internal/harness"
	"github.com/nomad-edge/nomad/nomad/upstreamrpc"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// TestUpstreamSnapshotDecodes checks that the snapshot of a running
// upstream 1.6.5 agent (a server with a client) decodes into our model
// with what its API shows: the node, a job's two versions, its running
// allocation's IDs and indexes, a namespace; and that nothing in it is of
// a type we do not know. It is the live counterpart of the unit tests on
// testdata/snapshot-state.bin.gz: a snapshot of another run, with other
// kinds of records, must read as well.
func TestUpstreamSnapshotDecodes(t *testing.T) {
	upstreamBin := harness.UnpackTool(t, upstreamGz, t.TempDir())
	ags := harness.NewAgents(t)
	p := harness.FreePorts(t)
	agent := ags.Add(harness.AgentConfig{
		Name:  "upstream",
		Bin:   upstreamBin,
		Ports: p,
		Config: agentHead(harness.DataDirVar, "upstream-1", p, true) + `server {
  enabled          = true
  bootstrap_expect = 1
}
client {
  enabled = true
}
` + rawExecPlugin,
	})
	agent.Start()
	api := agent.API()
	wait.Poll(t, 60*time.Second, "the upstream node ready", func() (bool, string) {
		agent.MustNotHaveDied()
		nodes, _, err := api.Nodes().List(nil)
		if err != nil {
			return false, err.Error()
		}
		if len(nodes) != 1 {
			return false, fmt.Sprintf("%d nodes", len(nodes))
		}
		return nodes[0].Status == "ready", "node status " + nodes[0].Status
	})

	_, err := api.Namespaces().Register(&nomadapi.Namespace{Name: "team-a", Description: "from the test"}, nil)
	must.NoError(t, err)
	job := sleepJob("snap")
	_, _, err = api.Jobs().Register(job, nil)
	must.NoError(t, err)
	job.Meta = map[string]string{"v": "2"} // a second version, in place
	_, _, err = api.Jobs().Register(job, nil)
	must.NoError(t, err)

	var alloc *nomadapi.Allocation
	wait.Poll(t, 60*time.Second, "the job's allocation of version 1 running", func() (bool, string) {
		agent.MustNotHaveDied()
		stubs, _, err := api.Jobs().Allocations("snap", false, nil)
		if err != nil {
			return false, err.Error()
		}
		for _, s := range stubs {
			if s.JobVersion == 1 && s.ClientStatus == "running" {
				alloc, _, err = api.Allocations().Info(s.ID, nil)
				return err == nil, fmt.Sprint(err)
			}
		}
		return false, fmt.Sprintf("%d allocations, none of version 1 running", len(stubs))
	})
	nodes, _, err := api.Nodes().List(nil)
	must.NoError(t, err)

	state := upstreamStateBin(t, agent.HTTPAddr()+"/v1/operator/snapshot")
	must.True(t, upstreamrpc.IsUpstreamState(state))
	s, err := upstreamrpc.ReadSnapshotState(bytes.NewReader(state))
	must.NoError(t, err)

	must.Len(t, 1, s.Nodes)
	must.Eq(t, nodes[0].ID, s.Nodes[0].ID)
	must.NotEq(t, "", s.Nodes[0].SecretID)
	versions := 0
	for _, j := range s.JobVersions {
		if j.ID == "snap" {
			versions++
		}
	}
	must.Eq(t, 2, versions)
	var found bool
	for _, a := range s.Allocs {
		if a.ID != alloc.ID {
			continue
		}
		found = true
		must.Eq(t, alloc.EvalID, a.EvalID)
		must.Eq(t, alloc.NodeID, a.NodeID)
		must.Eq(t, alloc.CreateIndex, a.CreateIndex)
		must.Eq(t, alloc.ModifyIndex, a.ModifyIndex)
		must.Eq(t, "running", a.ClientStatus)
	}
	must.True(t, found, must.Sprintf("allocation %s in the snapshot", alloc.ID))
	var names []string
	for _, ns := range s.Namespaces {
		names = append(names, ns.Name)
	}
	must.SliceContains(t, names, "team-a")
	for _, nc := range s.NotCarried {
		must.False(t, strings.HasPrefix(nc.Kind, "type byte"), must.Sprintf("a record type we do not know: %+v", nc))
	}
}

// upstreamStateBin fetches an upstream snapshot archive and returns its
// state.bin. Reading the archive is not what this test checks: it takes
// the file out the simplest way.
func upstreamStateBin(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	must.NoError(t, err)
	defer resp.Body.Close()
	must.Eq(t, http.StatusOK, resp.StatusCode)
	zr, err := gzip.NewReader(resp.Body)
	must.NoError(t, err)
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			t.Fatal("the snapshot archive has no state.bin")
		}
		must.NoError(t, err)
		if h.Name == "state.bin" {
			b, err := io.ReadAll(tr)
			must.NoError(t, err)
			return b
		}
	}
}
