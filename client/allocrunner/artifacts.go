package allocrunner

import (
	"context"
	"fmt"
	"maps"

	"github.com/nomad-edge/nomad/client/getter"
	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// fetchArtifacts fetches the task's artifacts into its directory before
// its first start, as upstream's artifact prestart hook: once per task
// (after a failure, the next attempt resumes with the artifact that failed),
// not again on its restarts, nor after a client restart once the task has
// started (its directory still holds them). A failure records a "Failed
// Artifact Download" event and is a recoverable start error, so the
// task's restart policy decides what follows.
func (tr *TaskRunner) fetchArtifacts() error {
	tr.mu.Lock()
	done := tr.artifactsDone
	tr.mu.Unlock()
	if done || len(tr.task.Artifacts) == 0 {
		return nil
	}
	if tr.artifacts == nil {
		tr.artifacts = getter.New(getter.DefaultConfig(), nil, tr.logger)
	}
	e := newEvent(structs.TaskDownloadingArtifacts, tr.clock.Now())
	e.DisplayMessage = "Client is downloading artifacts"
	tr.EmitEvent(e)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-tr.killCh:
		case <-tr.shutdownCh:
		case <-ctx.Done():
		}
		cancel()
	}()

	// The client fetches on the host: ${NOMAD_TASK_DIR} and friends are
	// the host's paths here, whatever the task sees, as upstream resolves
	// an artifact's paths on the client.
	vars := tr.node.vars()
	maps.Copy(vars, buildEnv(tr.envInput(tr.allocDir, tr.dir)))
	for i := tr.artifactsGot; i < len(tr.task.Artifacts); i++ {
		req := artifactRequest(tr.task.Artifacts[i], vars, tr.dir.Dir)
		res, err := tr.artifacts.Get(ctx, req)
		if err != nil {
			if tr.killed() || tr.shuttingDown() {
				return drivers.NewRecoverableError(fmt.Errorf("artifact download cancelled: %w", err), true)
			}
			msg := fmt.Sprintf("failed to download artifact %q: %v", req.Source, err)
			tr.logger.Warn("failed to download artifact", "source", req.Source, "error", err)
			ev := newEvent(structs.TaskArtifactDownloadFailed, tr.clock.Now())
			ev.DownloadError = msg
			ev.DisplayMessage = msg
			tr.EmitEvent(ev)
			return drivers.NewRecoverableError(fmt.Errorf("%s", msg), true)
		}
		if res.Stale != nil {
			// Beyond upstream: the node is cut off from the artifact's
			// server and starts the task with the copy it kept.
			ev := newEvent(structs.TaskDownloadingArtifacts, tr.clock.Now())
			ev.DisplayMessage = fmt.Sprintf("Using the cached copy of %q: %v", req.Source, res.Stale)
			tr.EmitEvent(ev)
		}
		tr.artifactsGot = i + 1
	}
	tr.mu.Lock()
	tr.artifactsDone = true
	tr.mu.Unlock()
	return nil
}

// artifactRequest resolves ${...} in an artifact's source, options,
// headers and destination against the task's environment and the node's
// attributes and meta, as upstream interpolates them.
func artifactRequest(a *structs.TaskArtifact, vars map[string]string, taskDir string) getter.Request {
	each := func(m map[string]string) map[string]string {
		if m == nil {
			return nil
		}
		out := make(map[string]string, len(m))
		for k, v := range m {
			out[k] = interpolate(v, vars)
		}
		return out
	}
	return getter.Request{
		Source:  interpolate(a.GetterSource, vars),
		Options: each(a.GetterOptions),
		Headers: each(a.GetterHeaders),
		Mode:    a.GetterMode,
		Dest:    interpolate(a.RelativeDest, vars),
		TaskDir: taskDir,
	}
}
