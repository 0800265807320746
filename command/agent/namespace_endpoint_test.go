package agent_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// The official Go client manages namespaces against our agent as it does
// against upstream: register, list (with the default), info, delete;
// a job in a missing namespace is a 400 naming it, and deleting the
// default namespace or one with a live job is refused.
func TestAgent_Namespaces_OfficialClient(t *testing.T) {
	dev := agenttest.NewDevAgent(t, nil)
	c, err := nomadapi.NewClient(&nomadapi.Config{Address: dev.HTTPAddr})
	must.NoError(t, err)
	ns := c.Namespaces()

	wm, err := ns.Register(&nomadapi.Namespace{Name: "fleet", Description: "edge fleet", Meta: map[string]string{"site": "north"}}, nil)
	must.NoError(t, err)
	must.Positive(t, wm.LastIndex)

	list, qm, err := ns.List(nil)
	must.NoError(t, err)
	must.Positive(t, qm.LastIndex)
	names := map[string]string{}
	for _, n := range list {
		names[n.Name] = n.Description
	}
	must.Eq(t, map[string]string{"default": "Default shared namespace", "fleet": "edge fleet"}, names)

	info, _, err := ns.Info("fleet", nil)
	must.NoError(t, err)
	must.Eq(t, "north", info.Meta["site"])
	_, _, err = ns.Info("nope", nil)
	must.ErrorContains(t, err, "404")

	job := nomadapi.NewBatchJob("edge-job", "edge-job", "global", 50)
	job.Namespace = new("nope")
	job.AddTaskGroup(nomadapi.NewTaskGroup("g", 1).AddTask(
		nomadapi.NewTask("t", "mock_driver").SetConfig("run_for", "1m")))
	_, _, err = c.Jobs().Register(job, nil)
	must.ErrorContains(t, err, "400")
	must.ErrorContains(t, err, `namespace "nope" does not exist`)

	job.Namespace = new("fleet")
	_, _, err = c.Jobs().Register(job, nil)
	must.NoError(t, err)
	_, err = ns.Delete("fleet", nil)
	must.ErrorContains(t, err, "non-terminal jobs: edge-job")
	_, err = ns.Delete("default", nil)
	must.ErrorContains(t, err, "400")
	must.ErrorContains(t, err, "default namespace cannot be deleted")

	_, _, err = c.Jobs().Deregister("edge-job", true, &nomadapi.WriteOptions{Namespace: "fleet"})
	must.NoError(t, err)
	_, err = ns.Delete("fleet", nil)
	must.NoError(t, err)
	list, _, err = ns.List(nil)
	must.NoError(t, err)
	must.Len(t, 1, list)
}

// The HTTP shapes: a name in the path, a body whose name disagrees with
// it, and a field we do not implement named in the refusal.
func TestAgent_Namespaces_HTTPShapes(t *testing.T) {
	dev := agenttest.NewDevAgent(t, nil)
	put := func(path, body string) (int, string) {
		req, err := http.NewRequest(http.MethodPut, dev.HTTPAddr+path, strings.NewReader(body))
		must.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		must.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := put("/v1/namespace/lab", `{"Description":"by path"}`)
	must.Eq(t, http.StatusOK, code, must.Sprint(body))
	code, body = put("/v1/namespace/lab", `{"Name":"other"}`)
	must.Eq(t, http.StatusBadRequest, code)
	must.StrContains(t, body, "does not match the path")
	code, body = put("/v1/namespace", `{"Name":"x","Capabilities":{"EnabledTaskDrivers":["raw_exec"]}}`)
	must.Eq(t, http.StatusBadRequest, code)
	must.StrContains(t, body, "Capabilities")
	code, body = put("/v1/namespace", `{"Name":"bad name"}`)
	must.Eq(t, http.StatusBadRequest, code)
	must.StrContains(t, body, `invalid namespace name "bad name"`)

	resp, err := http.Get(dev.HTTPAddr + "/v1/namespaces?prefix=la")
	must.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	must.StrContains(t, string(b), `"Name":"lab"`)
	must.StrNotContains(t, string(b), `"default"`)
	must.NotEq(t, "", resp.Header.Get("X-Nomad-Index"))
}

// With ACLs on, a namespace write needs a management token: an anonymous
// caller gets a 403 that says what to set.
func TestAgent_Namespaces_ACL(t *testing.T) {
	dev := agenttest.NewDevAgent(t, func(c *agent.Config) { c.ACL = &agent.ACLConfig{Enabled: true} })
	anon, err := nomadapi.NewClient(&nomadapi.Config{Address: dev.HTTPAddr})
	must.NoError(t, err)
	tok, _, err := anon.ACLTokens().Bootstrap(nil)
	must.NoError(t, err)
	_, err = anon.Namespaces().Register(&nomadapi.Namespace{Name: "fleet"}, nil)
	must.ErrorContains(t, err, "403")
	must.ErrorContains(t, err, "no ACL token given")
	mgmt, err := nomadapi.NewClient(&nomadapi.Config{Address: dev.HTTPAddr, SecretID: tok.SecretID})
	must.NoError(t, err)
	_, err = mgmt.Namespaces().Register(&nomadapi.Namespace{Name: "fleet"}, nil)
	must.NoError(t, err)
	_, _, err = anon.Namespaces().List(nil)
	must.NoError(t, err, must.Sprint("the list is filtered, not refused"))

	_, err = mgmt.ACLPolicies().Upsert(&nomadapi.ACLPolicy{Name: "fleet-writer", Rules: `namespace "fleet" { policy = "write" }`}, nil)
	must.NoError(t, err)
	writerTok, _, err := mgmt.ACLTokens().Create(&nomadapi.ACLToken{Name: "w", Type: "client", Policies: []string{"fleet-writer"}}, nil)
	must.NoError(t, err)
	writer, err := nomadapi.NewClient(&nomadapi.Config{Address: dev.HTTPAddr, SecretID: writerTok.SecretID})
	must.NoError(t, err)
	_, err = writer.Namespaces().Register(&nomadapi.Namespace{Name: "fleet", Description: "mine now"}, nil)
	must.ErrorContains(t, err, "403")
	must.ErrorContains(t, err, "management token")
	_, err = writer.Namespaces().Delete("fleet", nil)
	must.ErrorContains(t, err, "403")
	seen, _, err := writer.Namespaces().List(nil)
	must.NoError(t, err)
	must.Len(t, 1, seen)
	must.Eq(t, "fleet", seen[0].Name)
}

// GET /v1/namespaces is a blocking query: a watcher waiting on the index
// it last saw is answered when a namespace is written, with the new index.
func TestAgent_Namespaces_Blocking(t *testing.T) {
	dev := agenttest.NewDevAgent(t, nil)
	c, err := nomadapi.NewClient(&nomadapi.Config{Address: dev.HTTPAddr})
	must.NoError(t, err)
	_, qm, err := c.Namespaces().List(nil)
	must.NoError(t, err)
	type answer struct {
		list []*nomadapi.Namespace
		qm   *nomadapi.QueryMeta
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		list, meta, err := c.Namespaces().List(&nomadapi.QueryOptions{WaitIndex: qm.LastIndex, WaitTime: time.Minute})
		done <- answer{list, meta, err}
	}()
	_, err = c.Namespaces().Register(&nomadapi.Namespace{Name: "fleet"}, nil)
	must.NoError(t, err)
	got := <-done
	must.NoError(t, got.err)
	must.Greater(t, qm.LastIndex, got.qm.LastIndex)
	must.Len(t, 2, got.list)
}
