package testutil_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad"
	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil"
	"github.com/nomad-edge/nomad/testutil/fault"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// federate starts two regions, "global" and "europe", of n servers each,
// and joins europe's servers to global's gossip pool; it returns once every
// server lists both regions.
func federate(t *testing.T, n int) (global, europe *testutil.Servers) {
	t.Helper()
	global = testutil.StartServers(t, testutil.ServersConfig{N: n})
	europe = testutil.StartServers(t, testutil.ServersConfig{N: n, Server: func(_ int, c *nomad.Config) { c.Region = "europe" }})
	for _, s := range europe.Servers {
		_, err := s.Join([]string{global.Servers[0].SerfAddr()})
		must.NoError(t, err)
	}
	all := slices.Concat(global.Servers, europe.Servers)
	wait.Poll(t, 10*time.Second, "every server lists both regions", func() (bool, string) {
		for _, s := range all {
			if got := s.Regions(); !slices.Equal(got, []string{"europe", "global"}) {
				return false, fmt.Sprint(s.SerfAddr(), " lists ", got)
			}
		}
		return true, ""
	})
	return global, europe
}

// A request names its region; a server of another region passes it to a
// server of that one, whose state answers it, writes and reads alike, and
// each region's raft holds only its own jobs. A region the pool does not
// know is "No path to region", as upstream answers it.
func TestRegions_RequestsForwardedByRegion(t *testing.T) {
	global, europe := federate(t, 1)
	g, e := global.Servers[0], europe.Servers[0]

	job := mock.Job()
	job.Region = "europe"
	var reg structs.JobRegisterResponse
	must.NoError(t, g.RPC("Job.Register", &structs.JobRegisterRequest{Job: job, WriteRequest: structs.WriteRequest{Region: "europe", Namespace: job.Namespace}}, &reg))
	got, err := e.State().JobByID(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	must.NotNil(t, got, must.Sprint("europe's state holds the job registered through global"))
	got, err = g.State().JobByID(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	must.Nil(t, got, must.Sprint("global's state does not"))

	var read structs.SingleJobResponse
	must.NoError(t, g.RPC("Job.GetJob", &structs.JobSpecificRequest{JobID: job.ID, QueryOptions: structs.QueryOptions{Region: "europe", Namespace: job.Namespace}}, &read))
	must.NotNil(t, read.Job, must.Sprint("read through global with region europe"))
	must.Eq(t, reg.JobModifyIndex, read.Job.JobModifyIndex)
	read = structs.SingleJobResponse{}
	must.NoError(t, g.RPC("Job.GetJob", &structs.JobSpecificRequest{JobID: job.ID, QueryOptions: structs.QueryOptions{Namespace: job.Namespace}}, &read))
	must.Nil(t, read.Job, must.Sprint("read through global for its own region"))

	var leader string
	must.NoError(t, g.RPC("Status.Leader", &structs.GenericRequest{QueryOptions: structs.QueryOptions{Region: "europe"}}, &leader))
	must.Eq(t, e.RPCAddr().String(), leader, must.Sprint("europe's leader, asked through global"))
	var peers []string
	must.NoError(t, g.RPC("Status.Peers", &structs.GenericRequest{QueryOptions: structs.QueryOptions{Region: "europe"}}, &peers))
	must.Eq(t, []string{e.RPCAddr().String()}, peers)

	err = g.RPC("Job.GetJob", &structs.JobSpecificRequest{JobID: job.ID, QueryOptions: structs.QueryOptions{Region: "mars"}}, &read)
	must.True(t, errors.Is(err, structs.ErrNoRegionPath), must.Sprint(err))
	must.EqError(t, err, "No path to region")
	var listed []string
	must.NoError(t, e.RPC("Region.List", &structs.GenericRequest{}, &listed))
	must.Eq(t, []string{"europe", "global"}, listed)
}

// A region cut off from the other keeps taking its own writes; a request
// for the unreachable region fails, promptly, instead of being served by
// the wrong region; healed, forwarding works again.
func TestRegions_CutOffRegionKeepsWorking(t *testing.T) {
	global, europe := federate(t, 1)
	g, e := global.Servers[0], europe.Servers[0]
	global.Net.Isolate(e.RPCAddr().String(), fault.Reset)
	europe.Net.Isolate(g.RPCAddr().String(), fault.Reset)

	own := mock.Job()
	var reg structs.JobRegisterResponse
	must.NoError(t, g.RPC("Job.Register", &structs.JobRegisterRequest{Job: own, WriteRequest: structs.WriteRequest{Namespace: own.Namespace}}, &reg))
	eu := mock.Job()
	eu.Region = "europe"
	must.NoError(t, e.RPC("Job.Register", &structs.JobRegisterRequest{Job: eu, WriteRequest: structs.WriteRequest{Region: "europe", Namespace: eu.Namespace}}, &reg))

	start := time.Now()
	far := mock.Job()
	far.Region = "europe"
	err := g.RPC("Job.Register", &structs.JobRegisterRequest{Job: far, WriteRequest: structs.WriteRequest{Region: "europe", Namespace: far.Namespace}}, &reg)
	must.Error(t, err, must.Sprint("a write for the cut-off region"))
	took := time.Since(start)
	must.True(t, took < 10*time.Second, must.Sprint("failed after ", took))
	got, err := g.State().JobByID(nil, far.Namespace, far.ID)
	must.NoError(t, err)
	must.Nil(t, got, must.Sprint("never served by the wrong region"))

	global.Net.Heal(e.RPCAddr().String())
	europe.Net.Heal(g.RPCAddr().String())
	wait.Poll(t, 10*time.Second, "forwarding to europe again", func() (bool, string) {
		err := g.RPC("Job.Register", &structs.JobRegisterRequest{Job: far, WriteRequest: structs.WriteRequest{Region: "europe", Namespace: far.Namespace}}, &reg)
		return err == nil, fmt.Sprint(err)
	})
	got, err = e.State().JobByID(nil, far.Namespace, far.ID)
	must.NoError(t, err)
	must.NotNil(t, got)
}
