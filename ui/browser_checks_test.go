package ui_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nomad-edge/nomad/testutil/wait"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent/agenttest"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// The allocation page shows its service checks as the client reports
// them (issue 20, item 2): a passing http check with its status code, and
// the same check turned failing, shown by the page on its own (it
// re-reads the client's results every few seconds) without a reload.
func TestUI_BrowserShowsChecks(t *testing.T) {
	b := browser(t)
	var failing atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if failing.Load() {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	must.NoError(t, err)

	a := agenttest.NewDevAgent(t, nil)
	job := &structs.Job{
		ID: "checked", Datacenters: []string{"dc1"},
		TaskGroups: []*structs.TaskGroup{{
			Name: "web", Count: 1,
			Services: []*structs.Service{{
				Name: "checked-api", PortLabel: port, Address: "127.0.0.1", Provider: structs.ServiceProviderNomad,
				Checks: []*structs.ServiceCheck{{
					Name: "alive", Type: structs.ServiceCheckHTTP, Path: "/health",
					Interval: time.Second, Timeout: time.Second,
				}},
			}},
			Tasks: []*structs.Task{{
				Name: "app", Driver: "mock_driver",
				Config:    map[string]any{"run_for": "1h"},
				Resources: &structs.Resources{CPU: 100, MemoryMB: 64},
			}},
		}},
	}
	job.Canonicalize()
	var reg structs.JobRegisterResponse
	must.NoError(t, a.Server().RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &reg))
	var allocID string
	wait.Poll(t, 20*time.Second, "the allocation running", func() (bool, string) {
		allocs, err := a.Server().State().AllocsByJob(nil, job.Namespace, job.ID, true)
		must.NoError(t, err)
		if len(allocs) != 1 || allocs[0].ClientStatus != structs.AllocClientStatusRunning {
			return false, fmt.Sprint(len(allocs), " allocs")
		}
		allocID = allocs[0].ID
		return true, ""
	})

	allocTab := tab(t, b, a.HTTPAddr+"/ui/allocations/"+allocID)
	row := `#alloc-checks tr[data-check="alive"][data-service="checked-api"]`
	waitFor(t, allocTab, 20*time.Second, "the passing check", row+`[data-status="success"]`)
	text := textOf(t, allocTab, row)
	must.StrContains(t, text, "HTTP "+strconv.Itoa(http.StatusOK))
	must.StrContains(t, text, "healthiness")
	must.StrContains(t, text, "nomad: http ok")
	screenshot(t, allocTab, "ui-allocation-checks.png")

	failing.Store(true)
	waitFor(t, allocTab, 30*time.Second, "the check failing, without a reload", row+`[data-status="failure"]`)
	must.StrContains(t, textOf(t, allocTab, row), "HTTP "+strconv.Itoa(http.StatusInternalServerError))
}
