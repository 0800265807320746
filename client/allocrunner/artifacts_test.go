package allocrunner

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/clienttest"
	"github.com/nomad-edge/nomad/client/getter"
	"github.com/nomad-edge/nomad/client/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// TestAllocRunner_ArtifactFailure checks a failed download as upstream
// records it: a "Failed Artifact Download" event naming the source and the
// error, the restart policy applied (two restarts, then failed), and the
// task never started.
func TestAllocRunner_ArtifactFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		a := clienttest.MockAlloc("node-1", map[string]any{"run_for": "1h"})
		a.Job.TaskGroups[0].Tasks[0].Artifacts = []*structs.TaskArtifact{{
			GetterSource: "../alloc/missing.bin", GetterMode: "file", RelativeDest: "local/app",
		}}
		ar := h.runner(t, a)
		go ar.Run()
		defer ar.Destroy()
		got := h.rec.waitStatus(t, a.ID, structs.AllocClientStatusFailed)
		ts := got.TaskStates["web"]
		must.Eq(t, 2, ts.Restarts)
		must.SliceNotContains(t, eventTypesOf(ts), structs.TaskStarted)
		var failed *structs.TaskEvent
		for _, e := range ts.Events {
			if e.Type == structs.TaskArtifactDownloadFailed {
				failed = e
			}
		}
		must.NotNil(t, failed)
		must.StrContains(t, failed.DownloadError, `failed to download artifact "../alloc/missing.bin"`)
		must.Eq(t, failed.DownloadError, failed.DisplayMessage)
	})
}

// TestAllocRunner_ArtifactFetchedOnce checks the artifact lands where its
// interpolated destination says before the first start, and that the
// task's restarts do not fetch it again (its source may be gone by then),
// as upstream's hook runs once per task.
func TestAllocRunner_ArtifactFetchedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		a := clienttest.MockAlloc("node-1", map[string]any{"run_for": "1s", "exit_code": 1})
		a.Job.TaskGroups[0].Tasks[0].Artifacts = []*structs.TaskArtifact{{
			GetterSource: "../alloc/${NOMAD_TASK_NAME}.bin", GetterMode: "file", RelativeDest: "${NOMAD_TASK_DIR}/${NOMAD_TASK_NAME}-app",
		}}
		ad := NewAllocDir(h.root, a.ID)
		must.NoError(t, os.MkdirAll(ad.SharedDir, 0o755))
		src := filepath.Join(ad.SharedDir, "web.bin")
		must.NoError(t, os.WriteFile(src, []byte("v1"), 0o644))

		ar := h.runner(t, a)
		go ar.Run()
		defer ar.Destroy()
		h.rec.waitFor(t, a.ID, func(a *structs.Allocation) bool {
			ts := a.TaskStates["web"]
			return ts != nil && ts.State == structs.TaskStateRunning
		})
		b, err := os.ReadFile(filepath.Join(ad.TaskDir("web").LocalDir, "web-app"))
		must.NoError(t, err)
		must.Eq(t, "v1", string(b))
		must.NoError(t, os.Remove(src))

		got := h.rec.waitStatus(t, a.ID, structs.AllocClientStatusFailed)
		ts := got.TaskStates["web"]
		must.Eq(t, 2, ts.Restarts)
		must.Eq(t, 3, countType(ts.Events, structs.TaskStarted))
		must.Eq(t, 1, countType(ts.Events, structs.TaskDownloadingArtifacts))
		must.Eq(t, 0, countType(ts.Events, structs.TaskArtifactDownloadFailed))
	})
}

// TestTaskRunner_RestoredStartedSkipsArtifacts checks that a task restored
// after a client restart, which had started before, does not fetch its
// artifacts again (they are in its directory), and one that never started
// does.
func TestTaskRunner_RestoredStartedSkipsArtifacts(t *testing.T) {
	a := clienttest.MockAlloc("node-1", nil)
	a.Job.TaskGroups[0].Tasks[0].Artifacts = []*structs.TaskArtifact{{GetterSource: "x"}}
	h := newHarness(t)
	ar := h.runner(t, a)
	tr := ar.tasks[0]
	tr.restore(&state.TaskRecord{State: &structs.TaskState{State: structs.TaskStateDead, StartedAt: time.Unix(1_000_000_000, 0)}})
	must.True(t, tr.artifactsDone)

	ar = h.runner(t, a)
	tr = ar.tasks[0]
	tr.restore(&state.TaskRecord{State: &structs.TaskState{State: structs.TaskStatePending}})
	must.False(t, tr.artifactsDone)
}

// switchTransport answers http requests with body until down is set, then
// fails them as a dead link would; no network is involved, so it runs in
// a synctest bubble.
type switchTransport struct {
	body []byte
	down atomic.Bool
}

func (s *switchTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if s.down.Load() {
		return nil, errors.New("dial tcp: connect: network is unreachable")
	}
	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(bytes.NewReader(s.body)),
		ContentLength: int64(len(s.body)), Header: http.Header{}, Request: req}, nil
}

// TestAllocRunner_ArtifactFromCacheWhenUnreachable checks the edge case
// the cache exists for: a new allocation on a node that cannot reach the
// artifact's server starts with the copy the client kept, and its events
// say so, instead of failing on the download.
func TestAllocRunner_ArtifactFromCacheWhenUnreachable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &switchTransport{body: []byte("#!/bin/sh\n")}
		cfg := getter.DefaultConfig()
		cfg.Transport = tr
		cache, err := getter.OpenCache(filepath.Join(t.TempDir(), "cache"), 1<<20, nil)
		must.NoError(t, err)
		g := getter.New(cfg, cache, nil)

		h := newHarness(t)
		run := func() *structs.Allocation {
			a := clienttest.MockAlloc("node-1", map[string]any{"run_for": "1h"})
			a.Job.TaskGroups[0].Tasks[0].Artifacts = []*structs.TaskArtifact{{
				GetterSource: "https://releases.example/app", GetterMode: "any", RelativeDest: "local/",
			}}
			must.NoError(t, h.db.PutAllocations(a))
			ar, err := NewAllocRunner(Config{Logger: clienttest.Logger(), Alloc: a, AllocDirRoot: h.root,
				StateDB: h.db, Drivers: h.drivers, StateUpdater: h.rec, Artifacts: g})
			must.NoError(t, err)
			go ar.Run()
			t.Cleanup(ar.Destroy)
			got := h.rec.waitStatus(t, a.ID, structs.AllocClientStatusRunning)
			must.FileExists(t, filepath.Join(NewAllocDir(h.root, a.ID).TaskDir("web").LocalDir, "app"))
			return got
		}
		run()
		tr.down.Store(true)
		got := run()
		var stale *structs.TaskEvent
		for _, e := range got.TaskStates["web"].Events {
			if e.Type == structs.TaskDownloadingArtifacts && strings.HasPrefix(e.DisplayMessage, "Using the cached copy") {
				stale = e
			}
		}
		must.NotNil(t, stale)
		must.StrContains(t, stale.DisplayMessage, "network is unreachable")
	})
}

// TestAllocRunner_ArtifactRetryResumes checks a start retried after a
// failed download fetches only what is still missing: the artifact that
// succeeded before is not fetched again (its source may be gone).
func TestAllocRunner_ArtifactRetryResumes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		a := clienttest.MockAlloc("node-1", map[string]any{"run_for": "1h"})
		a.Job.TaskGroups[0].Tasks[0].Artifacts = []*structs.TaskArtifact{
			{GetterSource: "../alloc/one", GetterMode: "file", RelativeDest: "local/one"},
			{GetterSource: "../alloc/two", GetterMode: "file", RelativeDest: "local/two"},
		}
		ad := NewAllocDir(h.root, a.ID)
		must.NoError(t, os.MkdirAll(ad.SharedDir, 0o755))
		one, two := filepath.Join(ad.SharedDir, "one"), filepath.Join(ad.SharedDir, "two")
		must.NoError(t, os.WriteFile(one, []byte("1"), 0o644))

		ar := h.runner(t, a)
		go ar.Run()
		defer ar.Destroy()
		h.rec.waitFor(t, a.ID, func(a *structs.Allocation) bool {
			ts := a.TaskStates["web"]
			return ts != nil && countType(ts.Events, structs.TaskArtifactDownloadFailed) == 1
		})
		must.NoError(t, os.Remove(one))
		must.NoError(t, os.WriteFile(two, []byte("2"), 0o644))

		got := h.rec.waitStatus(t, a.ID, structs.AllocClientStatusRunning)
		must.Eq(t, 1, got.TaskStates["web"].Restarts)
		for name, want := range map[string]string{"one": "1", "two": "2"} {
			b, err := os.ReadFile(filepath.Join(ad.TaskDir("web").LocalDir, name))
			must.NoError(t, err)
			must.Eq(t, want, string(b))
		}
	})
}
