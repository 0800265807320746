package agent_test

import (
	"fmt"
	"io"
	"net/http"
	"testing"

	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// BenchmarkHTTP_JobList100 is `GET /v1/jobs` of 100 registered jobs on a
// dev agent, over loopback HTTP without compression: the HTTP layer, the
// in-process RPC to the server and the JSON answer.
//
//	go test -run '^$' -bench HTTP_JobList100 -benchmem ./command/agent/
func BenchmarkHTTP_JobList100(b *testing.B) {
	a := agenttest.NewDevAgent(b, nil)
	c, err := nomadapi.NewClient(&nomadapi.Config{Address: a.HTTPAddr})
	must.NoError(b, err)
	for i := range 100 {
		job := nomadapi.NewBatchJob(fmt.Sprintf("bench-%03d", i), fmt.Sprintf("bench-%03d", i), "global", 50)
		job.Datacenters = []string{"nowhere"}
		tg := nomadapi.NewTaskGroup("g", 1)
		tg.AddTask(nomadapi.NewTask("t", "mock_driver"))
		job.AddTaskGroup(tg)
		_, _, err := c.Jobs().Register(job, nil)
		must.NoError(b, err)
	}
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	b.ResetTimer()
	for b.Loop() {
		resp, err := client.Get(a.HTTPAddr + "/v1/jobs")
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatal(resp.Status)
		}
	}
}
