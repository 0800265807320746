package nomad

import (
	"errors"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

func upsertPool(s *Server, secret string, pools ...*structs.NodePool) error {
	return s.RPC("NodePool.UpsertNodePools", &structs.NodePoolUpsertRequest{
		NodePools: pools, WriteRequest: structs.WriteRequest{AuthToken: secret}}, &structs.GenericResponse{})
}

func listPools(t *testing.T, s *Server, secret string) []string {
	t.Helper()
	var resp structs.NodePoolListResponse
	must.NoError(t, s.RPC("NodePool.List", &structs.NodePoolListRequest{
		QueryOptions: structs.QueryOptions{AuthToken: secret}}, &resp))
	var names []string
	for _, p := range resp.NodePools {
		names = append(names, p.Name)
	}
	return names
}

// The pool RPCs: a registering node creates its pool, ListNodes and
// ListJobs answer per pool ("all" lists every node), a node cannot join
// "all", and an invalid pool is refused with every problem named.
func TestNodePool_Endpoints(t *testing.T) {
	s := testServer(t, nil)
	node := mock.Node()
	node.NodePool = "edge"
	var reg structs.NodeUpdateResponse
	must.NoError(t, s.RPC("Node.Register", &structs.NodeRegisterRequest{Node: node}, &reg))
	must.Eq(t, []string{"all", "default", "edge"}, listPools(t, s, ""))

	bad := mock.Node()
	bad.NodePool = structs.NodePoolAll
	err := s.RPC("Node.Register", &structs.NodeRegisterRequest{Node: bad}, &reg)
	must.ErrorIs(t, err, structs.ErrInvalidRequest)
	must.ErrorContains(t, err, "a node cannot join it")

	var nodes structs.NodePoolNodesResponse
	must.NoError(t, s.RPC("NodePool.ListNodes", &structs.NodePoolSpecificRequest{Name: "edge"}, &nodes))
	must.Len(t, 1, nodes.Nodes)
	must.NoError(t, s.RPC("NodePool.ListNodes", &structs.NodePoolSpecificRequest{Name: "default"}, &nodes))
	must.Len(t, 0, nodes.Nodes)
	must.NoError(t, s.RPC("NodePool.ListNodes", &structs.NodePoolSpecificRequest{Name: "all"}, &nodes))
	must.Len(t, 1, nodes.Nodes)
	err = s.RPC("NodePool.ListNodes", &structs.NodePoolSpecificRequest{Name: "nope"}, &nodes)
	must.True(t, errors.Is(err, structs.ErrUnknownNodePool))

	job := mock.Job()
	job.NodePool = "edge"
	must.NoError(t, s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &structs.JobRegisterResponse{}))
	var jobs structs.NodePoolJobsResponse
	must.NoError(t, s.RPC("NodePool.ListJobs", &structs.NodePoolSpecificRequest{Name: "edge"}, &jobs))
	must.Len(t, 1, jobs.Jobs)
	must.NoError(t, s.RPC("Namespace.UpsertNamespaces", &structs.NamespaceUpsertRequest{
		Namespaces: []*structs.Namespace{{Name: "other"}}}, &structs.GenericResponse{}))
	must.NoError(t, s.RPC("NodePool.ListJobs", &structs.NodePoolSpecificRequest{Name: "edge",
		QueryOptions: structs.QueryOptions{Namespace: "other"}}, &jobs))
	must.Len(t, 0, jobs.Jobs, must.Sprint("jobs are listed in the request's namespace"))

	err = upsertPool(s, "", &structs.NodePool{Name: "bad name!", Disconnect: &structs.NodePoolDisconnect{
		LostAfter: -time.Second, Reconcile: "newest"}})
	must.ErrorIs(t, err, structs.ErrInvalidRequest)
	must.ErrorContains(t, err, `invalid node pool name "bad name!"`)
	must.ErrorContains(t, err, "disconnect.lost_after can't be negative")
	must.ErrorContains(t, err, `disconnect.reconcile "newest" is not one of`)
}

// With ACLs a token reads only the pools its node_pool rules grant, writes
// only where it has write, and a blocking list wakes on a new pool.
func TestNodePool_ACLAndBlocking(t *testing.T) {
	s, mgmt := aclServer(t)
	must.NoError(t, upsertPool(s, mgmt.SecretID, &structs.NodePool{Name: "edge"}, &structs.NodePool{Name: "lab"}))
	tok := clientToken(t, s, mgmt, `node_pool "edge" { policy = "write" }
node_pool "l*" { policy = "read" }`)

	must.Eq(t, []string{"edge", "lab"}, listPools(t, s, tok.SecretID))
	must.NoError(t, upsertPool(s, tok.SecretID, &structs.NodePool{Name: "edge", Description: "mine"}))
	err := upsertPool(s, tok.SecretID, &structs.NodePool{Name: "lab", Description: "theirs"})
	must.True(t, errors.Is(err, structs.ErrPermissionDenied))
	must.ErrorContains(t, err, `node pool write on "lab"`)
	err = s.RPC("NodePool.GetNodePool", &structs.NodePoolSpecificRequest{Name: "default",
		QueryOptions: structs.QueryOptions{AuthToken: tok.SecretID}}, &structs.SingleNodePoolResponse{})
	must.True(t, errors.Is(err, structs.ErrPermissionDenied))

	var first structs.NodePoolListResponse
	must.NoError(t, s.RPC("NodePool.List", &structs.NodePoolListRequest{
		QueryOptions: structs.QueryOptions{AuthToken: mgmt.SecretID}}, &first))
	done := make(chan structs.NodePoolListResponse, 1)
	go func() {
		var resp structs.NodePoolListResponse
		_ = s.RPC("NodePool.List", &structs.NodePoolListRequest{QueryOptions: structs.QueryOptions{
			AuthToken: mgmt.SecretID, MinQueryIndex: first.Index, MaxQueryTime: time.Minute}}, &resp)
		done <- resp
	}()
	must.NoError(t, upsertPool(s, mgmt.SecretID, &structs.NodePool{Name: "new"}))
	resp := <-done
	must.Greater(t, first.Index, resp.Index)
	must.Len(t, 5, resp.NodePools)
}

// job plan shows which disconnect policy the placements would run under
// and where it came from, before anything runs: a group without settings
// placed in a pool with a policy gets the pool's, one with its own keeps it.
func TestJob_Plan_ShowsDisconnectPolicy(t *testing.T) {
	s := lifecycleServer(t)
	node := mock.Node()
	node.NodePool = "edge"
	must.NoError(t, s.RPC("Node.Register", &structs.NodeRegisterRequest{Node: node}, &structs.NodeUpdateResponse{}))
	must.NoError(t, upsertPool(s, "", &structs.NodePool{Name: "edge", Disconnect: &structs.NodePoolDisconnect{LostAfter: time.Hour}}))
	job := mock.Job()
	job.NodePool = "edge"
	job.TaskGroups[0].Count = 2
	resp := plan(t, s, job)
	must.Eq(t, map[string][]string{"web": {"lost_after 1h, replace true, reconcile best_score (from node pool edge)"}},
		resp.DisconnectPolicies)

	job.TaskGroups[0].MaxClientDisconnect = new(10 * time.Minute)
	resp = plan(t, s, job)
	must.Eq(t, map[string][]string{"web": {"lost_after 10m, replace true, reconcile best_score (from the group)"}},
		resp.DisconnectPolicies)
}
