package nomad

import (
	"errors"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

func upsertNamespace(t *testing.T, s *Server, secret string, ns ...*structs.Namespace) error {
	t.Helper()
	return s.RPC("Namespace.UpsertNamespaces", &structs.NamespaceUpsertRequest{
		Namespaces: ns, WriteRequest: structs.WriteRequest{AuthToken: secret}}, &structs.GenericResponse{})
}

func deleteNamespace(t *testing.T, s *Server, secret, name string) error {
	t.Helper()
	return s.RPC("Namespace.DeleteNamespaces", &structs.NamespaceDeleteRequest{
		Namespaces: []string{name}, WriteRequest: structs.WriteRequest{AuthToken: secret}}, &structs.GenericResponse{})
}

func listNamespaces(t *testing.T, s *Server, secret string) []string {
	t.Helper()
	var resp structs.NamespaceListResponse
	must.NoError(t, s.RPC("Namespace.ListNamespaces", &structs.NamespaceListRequest{
		QueryOptions: structs.QueryOptions{AuthToken: secret}}, &resp))
	var names []string
	for _, ns := range resp.Namespaces {
		names = append(names, ns.Name)
	}
	return names
}

// The life of a namespace through the RPCs: created, listed, read,
// updated, deleted; the default one is always listed and never deleted.
func TestNamespace_CreateListDelete(t *testing.T) {
	s := testServer(t, nil)
	must.Eq(t, []string{"default"}, listNamespaces(t, s, ""))

	must.NoError(t, upsertNamespace(t, s, "", &structs.Namespace{Name: "fleet", Description: "edge", Meta: map[string]string{"site": "north"}}))
	must.Eq(t, []string{"default", "fleet"}, listNamespaces(t, s, ""))
	var one structs.SingleNamespaceResponse
	must.NoError(t, s.RPC("Namespace.GetNamespace", &structs.NamespaceSpecificRequest{Name: "fleet"}, &one))
	must.Eq(t, "edge", one.Namespace.Description)
	must.Eq(t, "north", one.Namespace.Meta["site"])
	created := one.Namespace.CreateIndex

	must.NoError(t, upsertNamespace(t, s, "", &structs.Namespace{Name: "fleet", Description: "changed"}))
	must.NoError(t, s.RPC("Namespace.GetNamespace", &structs.NamespaceSpecificRequest{Name: "fleet"}, &one))
	must.Eq(t, "changed", one.Namespace.Description)
	must.Eq(t, created, one.Namespace.CreateIndex)

	must.NoError(t, deleteNamespace(t, s, "", "fleet"))
	must.Eq(t, []string{"default"}, listNamespaces(t, s, ""))
	must.NoError(t, s.RPC("Namespace.GetNamespace", &structs.NamespaceSpecificRequest{Name: "fleet"}, &one))
	must.Nil(t, one.Namespace)
	must.True(t, errors.Is(deleteNamespace(t, s, "", "fleet"), structs.ErrUnknownNamespace))

	err := deleteNamespace(t, s, "", structs.DefaultNamespace)
	must.True(t, errors.Is(err, structs.ErrInvalidRequest))
	must.ErrorContains(t, err, "default namespace cannot be deleted")
}

// Names follow upstream's rule and quotas (an Enterprise feature) are
// refused by name instead of stored unenforced.
func TestNamespace_Validation(t *testing.T) {
	s := testServer(t, nil)
	for _, tc := range []struct {
		ns   *structs.Namespace
		want string
	}{
		{&structs.Namespace{Name: "has space"}, `invalid namespace name "has space"`},
		{&structs.Namespace{Name: "a/b"}, `invalid namespace name "a/b"`},
		{&structs.Namespace{Name: string(make([]byte, 129))}, "invalid namespace name"},
		{&structs.Namespace{Name: "q", Quota: "big"}, `quota "big": resource quotas are not supported`},
	} {
		err := upsertNamespace(t, s, "", tc.ns)
		must.True(t, errors.Is(err, structs.ErrInvalidRequest), must.Sprint(tc.want))
		must.ErrorContains(t, err, tc.want)
	}
	must.NoError(t, upsertNamespace(t, s, "", &structs.Namespace{Name: "Edge-01"}))
}

// A namespace that still has a job that is not dead cannot be deleted;
// the refusal names the job. Stopping the job first lets it go.
func TestNamespace_DeleteRefusedWithJobs(t *testing.T) {
	s := testServer(t, func(c *Config) { c.NumSchedulers = 0 })
	must.NoError(t, upsertNamespace(t, s, "", &structs.Namespace{Name: "fleet"}))
	job := mock.Job()
	job.Namespace = "fleet"
	must.NoError(t, s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &structs.JobRegisterResponse{}))

	err := deleteNamespace(t, s, "", "fleet")
	must.True(t, errors.Is(err, structs.ErrInvalidRequest))
	must.ErrorContains(t, err, `namespace "fleet" has non-terminal jobs: `+job.ID)
	must.Eq(t, []string{"default", "fleet"}, listNamespaces(t, s, ""))
}

// A job in a namespace that does not exist is refused, naming it, and
// nothing is written; reads naming such a namespace are refused too
// rather than answered as if it were empty.
func TestNamespace_MissingNamespaceRefused(t *testing.T) {
	s := testServer(t, nil)
	before, err := s.State().LatestIndex()
	must.NoError(t, err)
	job := mock.Job()
	job.Namespace = "nope"
	err = s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &structs.JobRegisterResponse{})
	must.True(t, errors.Is(err, structs.ErrInvalidRequest))
	must.ErrorContains(t, err, `namespace "nope" does not exist`)
	after, err := s.State().LatestIndex()
	must.NoError(t, err)
	must.Eq(t, before, after, must.Sprint("a refused register writes nothing"))

	q := structs.QueryOptions{Namespace: "nope"}
	for method, args := range map[string]any{
		"Job.GetJob":  &structs.JobSpecificRequest{JobID: job.ID, QueryOptions: q},
		"Job.List":    &structs.JobListRequest{QueryOptions: q},
		"Job.Summary": &structs.JobSpecificRequest{JobID: job.ID, QueryOptions: q},
		"Alloc.List":  &structs.AllocListRequest{QueryOptions: q},
		"Eval.List":   &structs.EvalListRequest{QueryOptions: q},
	} {
		var reply map[string]any
		err := s.RPC(method, args, &reply)
		must.ErrorContains(t, err, `namespace "nope" does not exist`, must.Sprint(method))
	}
	var all structs.JobListResponse
	must.NoError(t, s.RPC("Job.List", &structs.JobListRequest{QueryOptions: structs.QueryOptions{Namespace: "*"}}, &all))
}

// Writes need a management token; a token sees in the list only the
// namespaces its policies grant something in, and is refused the others.
func TestNamespace_ACL(t *testing.T) {
	s, mgmt := aclServer(t)
	must.NoError(t, upsertNamespace(t, s, mgmt.SecretID, &structs.Namespace{Name: "fleet"}, &structs.Namespace{Name: "lab"}))
	reader := clientToken(t, s, mgmt, `namespace "fleet" { policy = "write" }`)

	err := upsertNamespace(t, s, reader.SecretID, &structs.Namespace{Name: "mine"})
	must.True(t, errors.Is(err, structs.ErrPermissionDenied))
	must.ErrorContains(t, err, "management token")
	err = deleteNamespace(t, s, reader.SecretID, "fleet")
	must.True(t, errors.Is(err, structs.ErrPermissionDenied))
	must.ErrorContains(t, upsertNamespace(t, s, "", &structs.Namespace{Name: "x"}), "no ACL token given")

	must.Eq(t, []string{"fleet"}, listNamespaces(t, s, reader.SecretID))
	must.Eq(t, []string{"default", "fleet", "lab"}, listNamespaces(t, s, mgmt.SecretID))
	err = s.RPC("Namespace.GetNamespace", &structs.NamespaceSpecificRequest{Name: "lab",
		QueryOptions: structs.QueryOptions{AuthToken: reader.SecretID}}, &structs.SingleNamespaceResponse{})
	must.True(t, errors.Is(err, structs.ErrPermissionDenied))
}

// A blocking list wakes when a namespace is written, as the other lists
// do: watchers (the web UI, scripts) see a new namespace without polling.
func TestNamespace_ListBlocks(t *testing.T) {
	s := testServer(t, nil)
	var first structs.NamespaceListResponse
	must.NoError(t, s.RPC("Namespace.ListNamespaces", &structs.NamespaceListRequest{}, &first))
	done := make(chan structs.NamespaceListResponse, 1)
	go func() {
		var resp structs.NamespaceListResponse
		_ = s.RPC("Namespace.ListNamespaces", &structs.NamespaceListRequest{QueryOptions: structs.QueryOptions{
			MinQueryIndex: first.Index, MaxQueryTime: time.Minute}}, &resp)
		done <- resp
	}()
	must.NoError(t, upsertNamespace(t, s, "", &structs.Namespace{Name: "fleet"}))
	resp := <-done
	must.Greater(t, first.Index, resp.Index)
	must.Len(t, 2, resp.Namespaces)
}
