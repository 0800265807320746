package client

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/clienttest"
	"github.com/nomad-edge/nomad/client/getter"
	"github.com/nomad-edge/nomad/client/state"
	"github.com/nomad-edge/nomad/helper/clock"
	"github.com/nomad-edge/nomad/helper/clock/clocktest"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil/fault"
)

// artifactLink serves one artifact until it is cut, then fails every
// request as a dead link would; it counts the requests.
type artifactLink struct {
	body     []byte
	cut      atomic.Bool
	requests atomic.Int32
}

func (l *artifactLink) RoundTrip(req *http.Request) (*http.Response, error) {
	l.requests.Add(1)
	if l.cut.Load() {
		return nil, errors.New("dial tcp: connect: network is unreachable")
	}
	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(bytes.NewReader(l.body)),
		ContentLength: int64(len(l.body)), Header: http.Header{}, Request: req}, nil
}

// TestClient_OfflineRebootKeepsArtifacts checks the classic edge job
// through a power cut: raw_exec-style task, binary from an artifact, the
// node cut off from both the servers and the artifact's server. The
// restarted client restarts the task within its disconnect window with
// the artifact already in its directory, without asking the artifact's
// server, and records no failed download.
func TestClient_OfflineRebootKeepsArtifacts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		link := &artifactLink{body: []byte("#!/bin/sh\nexec sleep 3600\n")}
		cfg := getter.DefaultConfig()
		cfg.Transport = link
		stateDir, allocDir := t.TempDir(), t.TempDir()
		opts := testClientOpts{
			db: state.NewMemDB(), stateDir: stateDir, allocDir: allocDir,
			boot:     clocktest.NewBoot(clock.Real(), "boot-1"),
			artifact: &ArtifactConfig{Config: cfg},
		}
		srv := clienttest.NewFakeServer()
		t.Cleanup(srv.Close)
		c1 := newTestClient(t, srv, opts)
		waitReady(t, c1)
		a := windowAlloc(c1.NodeID(), 10*time.Minute, nil)
		a.Job.TaskGroups[0].Tasks[0].Artifacts = []*structs.TaskArtifact{{
			GetterSource: "https://releases.example/app", GetterMode: "any", RelativeDest: "local/",
		}}
		srv.UpsertAllocs(a)
		srv.WaitFor(t, time.Minute, func(v *clienttest.View) (bool, string) {
			return v.AllocsWithStatus([]string{a.ID}, structs.AllocClientStatusRunning)
		})
		app := filepath.Join(allocDir, a.ID, "web", "local", "app")
		must.FileExists(t, app)
		must.Eq(t, int32(1), link.requests.Load())

		srv.Cut(fault.Reset)
		link.cut.Store(true)
		time.Sleep(30 * time.Second)
		must.NoError(t, c1.Shutdown()) // the power cut
		time.Sleep(time.Minute)

		opts.drivers = powerCutDrivers(t)
		c2 := newTestClient(t, srv, opts)
		t.Cleanup(func() { _ = c2.Destroy() })
		time.Sleep(1250 * time.Millisecond) // the restart delay, 1s plus jitter
		synctest.Wait()
		got := localAlloc(t, c2, a.ID)
		ts := got.TaskStates["web"]
		must.Eq(t, structs.AllocClientStatusRunning, got.ClientStatus, must.Sprint(clienttest.DescribeAlloc(got)))
		must.NotNil(t, clienttest.LastEvent(ts, structs.TaskRestartedOffline))
		must.Eq(t, 0, countEvents(ts, structs.TaskArtifactDownloadFailed))
		must.Eq(t, int32(1), link.requests.Load(), must.Sprint("the artifact's server was not asked again"))
		b, err := os.ReadFile(app)
		must.NoError(t, err)
		must.Eq(t, string(link.body), string(b))
	})
}
