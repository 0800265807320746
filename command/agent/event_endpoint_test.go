package agent_test

//lint:file-ignore SA1019 the test reads the legacy Resources fields on purpose: upstream keeps filling them, and tools such as the Autoscaler's nomad-apm read them

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/nomad-edge/nomad/testutil/wait"

	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// nextEvents returns the next batch from the official client's stream.
func nextEvents(t *testing.T, ch <-chan *nomadapi.Events) *nomadapi.Events {
	t.Helper()
	select {
	case ev, ok := <-ch:
		must.True(t, ok, must.Sprint("the stream ended"))
		must.NoError(t, ev.Err)
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no events within 10s")
		return nil
	}
}

// The official client's EventStream().Stream works against our agent: a
// job registered after subscribing arrives as a JobRegistered event whose
// payload the client decodes into its own Job. Integrators that react to
// cluster changes (autoscalers, notifiers) are built on exactly this.
func TestHTTP_EventStream_OfficialClient(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	c := officialClient(t, a)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := c.EventStream().Stream(ctx, map[nomadapi.Topic][]string{nomadapi.TopicJob: {"evented"}}, 0, nil)
	must.NoError(t, err)
	allocs, err := c.EventStream().Stream(ctx, map[nomadapi.Topic][]string{nomadapi.TopicAllocation: {"evented"}}, 0, nil)
	must.NoError(t, err)

	resp, _, err := c.Jobs().Register(mockJob("evented", "mock_driver", map[string]any{"run_for": "5m"}), nil)
	must.NoError(t, err)

	ev := nextEvents(t, ch)
	must.Positive(t, ev.Index)
	must.SliceNotEmpty(t, ev.Events)
	e := ev.Events[0]
	must.Eq(t, nomadapi.TopicJob, e.Topic)
	must.Eq(t, "JobRegistered", e.Type)
	must.Eq(t, "evented", e.Key)
	must.Eq(t, resp.JobModifyIndex, e.Index)
	job, err := e.Job()
	must.NoError(t, err)
	must.Eq(t, "evented", *job.ID)

	// Allocation events are selected by their job and decode too, until
	// the client reports the allocation running.
	wait.Poll(t, 10*time.Second, "allocation running on the stream", func() (bool, string) {
		ev := nextEvents(t, allocs)
		a, err := ev.Events[0].Allocation()
		must.NoError(t, err)
		must.Eq(t, "evented", a.JobID)
		must.NotNil(t, a.Resources, must.Sprint("the payload has the read routes' shape, legacy Resources included"))
		must.Eq(t, 100, *a.Resources.CPU)
		return a.ClientStatus == nomadapi.AllocClientStatusRunning, ev.Events[0].Type + " " + a.ClientStatus
	})

	// The same event is there again for a stream that starts at its index.
	again, err := c.EventStream().Stream(ctx, map[nomadapi.Topic][]string{nomadapi.TopicJob: {"*"}}, e.Index, nil)
	must.NoError(t, err)
	must.Eq(t, e.Index, nextEvents(t, again).Index)
}

// A malformed request is a 400 naming the parameter, before any stream
// starts: a topic with a second colon (upstream refuses it) used to
// subscribe to the key "web:extra" silently.
func TestHTTP_EventStream_BadInput(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	for _, tc := range []struct{ query, want string }{
		{"topic=Jobs", `Invalid topic "Jobs"`},
		{"index=soon", `Invalid index "soon"`},
		{"index=-1", `Invalid index "-1"`},
		{"topic=Job:web:extra", "Invalid key value pair for topic, topic: Job:web:extra"},
	} {
		// The status comes first; a stream that started (200) is not read.
		resp, err := http.Get(a.HTTPAddr + "/v1/event/stream?" + tc.query)
		must.NoError(t, err)
		var body []byte
		if resp.StatusCode != http.StatusOK {
			body, _ = io.ReadAll(resp.Body)
		}
		resp.Body.Close()
		must.Eq(t, http.StatusBadRequest, resp.StatusCode, must.Sprint(tc.query))
		must.StrContains(t, string(body), tc.want)
	}
}

// With ACLs on, each topic asks what its read endpoint asks: a token
// that reads jobs in "default" streams Job events there but not Node
// events, nor every topic at once (management only, as upstream); an
// anonymous caller streams nothing.
func TestHTTP_EventStream_ACL(t *testing.T) {
	a := agenttest.NewDevAgent(t, func(c *agent.Config) { c.ACL = &agent.ACLConfig{Enabled: true} })
	anon := officialClient(t, a)
	mgmtTok, _, err := anon.ACLTokens().Bootstrap(nil)
	must.NoError(t, err)
	mgmt, err := nomadapi.NewClient(&nomadapi.Config{Address: a.HTTPAddr, SecretID: mgmtTok.SecretID})
	must.NoError(t, err)
	_, err = mgmt.ACLPolicies().Upsert(&nomadapi.ACLPolicy{Name: "readonly", Rules: `namespace "default" { policy = "read" }`}, nil)
	must.NoError(t, err)
	tok, _, err := mgmt.ACLTokens().Create(&nomadapi.ACLToken{Name: "ro", Type: "client", Policies: []string{"readonly"}}, nil)
	must.NoError(t, err)
	ro, err := nomadapi.NewClient(&nomadapi.Config{Address: a.HTTPAddr, SecretID: tok.SecretID})
	must.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream := func(c *nomadapi.Client, topic nomadapi.Topic) error {
		_, err := c.EventStream().Stream(ctx, map[nomadapi.Topic][]string{topic: nil}, 0, nil)
		return err
	}
	must.NoError(t, stream(ro, nomadapi.TopicJob))
	must.ErrorContains(t, stream(ro, nomadapi.TopicNode), "node read")
	must.ErrorContains(t, stream(ro, nomadapi.TopicAll), "management")
	must.ErrorContains(t, stream(anon, nomadapi.TopicJob), "403")
	must.NoError(t, stream(mgmt, nomadapi.TopicAll))
}
