package allocrunner

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nomad-edge/nomad/client/template"
	"github.com/nomad-edge/nomad/helper/clock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// TemplateSources gives a task's templates where to read variables and
// services: the servers, in the allocation's namespace, with the token
// token returns (the task's workload identity).
type TemplateSources interface {
	Source(namespace string, token func() string) template.Source
	// Config is the client's template block.
	Config() template.ClientConfig
}

// templateRetryMax is the last retry delay of a template whose source
// fails, when the client's template block sets none.
const templateRetryMax = template.DefaultRetryMaxBackoff

// templateHook renders a task's templates before its first start, and
// again when what they read changes.
//
// The first render happens in the task runner's start, before the driver
// is asked: a template reading a variable that does not exist yet waits
// for it, as upstream's does; any other render error fails the start
// (a recoverable "Setup Failure"). Then one goroutine per template waits,
// with blocking queries, for its data to change, waits wait.min, renders
// again and, only if the content changed, writes it and applies
// change_mode after a random part of splay: restart the task, signal it,
// or nothing. While the source fails (servers cut off) it retries with
// backoff and the file keeps its content.
type templateHook struct {
	logger hclog.Logger
	clock  clock.Clock
	tr     *TaskRunner
	src    template.Source
	// snap is the data the templates last rendered from, persisted with
	// the task, which src falls back on when the servers cannot answer.
	snap *template.Snapshot
	cfg  template.ClientConfig

	mu       sync.Mutex
	rendered []*template.Result // by template; nil until rendered
	env      map[string]string  // from env = true templates
	started  bool
	ctx      context.Context
	cancel   context.CancelFunc
}

func newTemplateHook(tr *TaskRunner, sources TemplateSources) *templateHook {
	h := &templateHook{logger: tr.logger.Named("template"), clock: tr.clock, tr: tr, snap: template.NewSnapshot(),
		rendered: make([]*template.Result, len(tr.task.Templates)), env: map[string]string{}}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	h.cfg = template.DefaultClientConfig()
	if sources != nil {
		h.cfg = sources.Config()
	}
	if h.cfg.RetryBackoff <= 0 {
		h.cfg.RetryBackoff = template.DefaultRetryBackoff
	}
	if h.cfg.RetryMaxBackoff <= 0 {
		h.cfg.RetryMaxBackoff = templateRetryMax
	}
	if sources != nil && len(tr.task.Templates) > 0 {
		// One watch per read for all the task's templates (Shared).
		h.src = template.WithFallback(template.Shared(sources.Source(tr.alloc.Namespace, tr.identity.token)), h.snap)
	}
	return h
}

// prestart renders every template the first time the task starts; later
// starts use what the watchers keep current.
func (h *templateHook) prestart() error {
	tmpls := h.tr.task.Templates
	h.mu.Lock()
	started := h.started
	h.mu.Unlock()
	if len(tmpls) == 0 || started {
		return nil
	}
	// A kill or shutdown ends a wait for a missing variable.
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	go func() {
		select {
		case <-h.tr.killCh:
		case <-h.tr.shutdownCh:
		case <-ctx.Done():
		}
		cancel()
	}()
	for i, t := range tmpls {
		for {
			res, err := h.render(t)
			if errors.Is(err, template.ErrMissingVar) {
				h.logger.Info("template waits for a variable", "error", err)
				if werr := template.Watch(ctx, h.src, res.Deps); werr != nil && ctx.Err() != nil {
					return fmt.Errorf("template %q: %w", t.DestPath, werr)
				}
				continue
			}
			if err != nil {
				return err
			}
			if err := h.apply(i, t, res); err != nil {
				return err
			}
			break
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.started || h.ctx.Err() != nil {
		return nil
	}
	h.started = true
	for i, t := range tmpls {
		go h.watch(i, t)
	}
	return nil
}

// resume renders the templates of a task a restarted client re-attached
// to: a file whose content is the same as the render stays and triggers
// nothing; one that differs is written and its change_mode applied. Then
// the watchers start.
func (h *templateHook) resume() {
	tmpls := h.tr.task.Templates
	if len(tmpls) == 0 {
		return
	}
	h.mu.Lock()
	if h.started {
		h.mu.Unlock()
		return
	}
	h.started = true
	h.mu.Unlock()
	for i, t := range tmpls {
		go func() {
			dst, _ := h.path(t.DestPath)
			if old, err := os.ReadFile(dst); dst != "" && err == nil {
				h.mu.Lock()
				h.rendered[i] = &template.Result{Content: old}
				if t.Envvars {
					maps.Copy(h.env, parseEnvFile(old))
				}
				h.mu.Unlock()
			}
			for h.ctx.Err() == nil {
				res, err := h.render(t)
				if errors.Is(err, template.ErrMissingVar) {
					err = template.Watch(h.ctx, h.src, res.Deps)
					if err == nil {
						continue
					}
				} else if err == nil {
					if err = h.apply(i, t, res); err == nil {
						h.changed(t)
					}
					if err == nil || errors.Is(err, errUnchanged) {
						h.watch(i, t)
						return
					}
				}
				if h.ctx.Err() != nil {
					return
				}
				h.logger.Warn("template data unavailable; keeping the rendered content", "template", t.DestPath, "error", err)
				if h.sleep(h.cfg.RetryBackoff) != nil {
					return
				}
			}
		}()
	}
}

// restoreData hands the hook the data an earlier client process
// persisted: renders fall back on it while the servers cannot answer.
func (h *templateHook) restoreData(b []byte) {
	if len(b) == 0 {
		return
	}
	if err := h.snap.UnmarshalJSON(b); err != nil {
		h.logger.Warn("ignoring the templates' persisted data", "error", err)
	}
}

// keep records what a render read and persists it with the task.
func (h *templateHook) keep(res *template.Result) {
	if len(res.Data) == 0 {
		return
	}
	h.snap.Record(res)
	if h.tr.db == nil {
		return
	}
	b, err := h.snap.MarshalJSON()
	if err == nil {
		err = h.tr.db.PutTaskTemplateData(h.tr.alloc.ID, h.tr.task.Name, b)
	}
	if err != nil {
		h.logger.Warn("persisting the templates' data failed", "error", err)
	}
}

// stop ends the watchers; the task runner calls it when Run returns.
func (h *templateHook) stop() { h.cancel() }

// setEnv adds the variables of env = true templates to env.
func (h *templateHook) setEnv(env map[string]string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	maps.Copy(env, h.env)
}

// render renders t once.
func (h *templateHook) render(t *structs.Template) (*template.Result, error) {
	text := t.EmbeddedTmpl
	if t.SourcePath != "" {
		src, err := h.path(t.SourcePath)
		if err != nil {
			return &template.Result{}, fmt.Errorf("template %q: source: %w", t.DestPath, err)
		}
		b, err := os.ReadFile(src)
		if err != nil {
			return &template.Result{}, fmt.Errorf("template %q: reading source: %w", t.DestPath, err)
		}
		text = string(b)
	}
	env := buildEnv(h.tr.envInput(h.tr.allocDir, h.tr.dir))
	return template.Render(h.ctx, template.Input{
		Name: fmt.Sprintf("template %q", t.DestPath), Text: text,
		LeftDelim: t.LeftDelim, RightDelim: t.RightDelim, ErrMissingKey: t.ErrMissingKey,
		Env: env, TaskDir: h.tr.dir.Dir, Source: h.src,
		NoFileSandbox: h.cfg.DisableFileSandbox, Denied: h.cfg.FunctionDenylist,
	})
}

// apply writes a render's content to the template's destination (and,
// for env = true, into the task's environment) and keeps the render; it
// reports whether the content changed.
func (h *templateHook) apply(i int, t *structs.Template, res *template.Result) error {
	h.keep(res)
	h.mu.Lock()
	prev := h.rendered[i]
	h.mu.Unlock()
	if prev != nil && bytes.Equal(prev.Content, res.Content) {
		h.mu.Lock()
		h.rendered[i] = res
		h.mu.Unlock()
		return errUnchanged
	}
	dst, err := h.path(t.DestPath)
	if err != nil {
		return fmt.Errorf("template %q: destination: %w", t.DestPath, err)
	}
	if err := writeRendered(dst, t, res.Content); err != nil {
		return fmt.Errorf("template %q: %w", t.DestPath, err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.rendered[i] = res
	if t.Envvars {
		maps.Copy(h.env, parseEnvFile(res.Content))
	}
	return nil
}

// path resolves a template's source or destination on the host: ${...}
// interpolated with the task's environment (host paths, as for
// artifacts), relative to the task's directory unless absolute, and
// refused outside the task's directory and the shared alloc/ directory.
func (h *templateHook) path(p string) (string, error) {
	vars := h.tr.node.vars()
	maps.Copy(vars, buildEnv(h.tr.envInput(h.tr.allocDir, h.tr.dir)))
	p = interpolate(p, vars)
	roots := []string{h.tr.dir.Dir, h.tr.allocDir.SharedDir}
	inside := func(full string) bool {
		for _, root := range roots {
			if rel, err := filepath.Rel(root, full); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				return true
			}
		}
		return false
	}
	// An absolute path the interpolation produced (${NOMAD_TASK_DIR}/x)
	// is used as is; any other path is relative to the task's directory,
	// as the servers' check reads it.
	if full := filepath.Clean(p); filepath.IsAbs(p) && inside(full) {
		return full, nil
	}
	if full := filepath.Join(h.tr.dir.Dir, p); inside(full) {
		return full, nil
	}
	return "", fmt.Errorf("%q is outside the task's directory and alloc/", p)
}

// errUnchanged is apply's answer for a render that changed nothing.
var errUnchanged = errors.New("unchanged")

// watch keeps template i current until the hook stops.
func (h *templateHook) watch(i int, t *structs.Template) {
	retry := time.Duration(0)
	for h.ctx.Err() == nil {
		h.mu.Lock()
		deps := h.rendered[i].Deps
		h.mu.Unlock()
		err := template.Watch(h.ctx, h.src, deps)
		var res *template.Result
		if err == nil {
			res, err = h.quiesce(t)
			if errors.Is(err, template.ErrMissingVar) {
				// Deleted while running: keep the file, wait for it.
				h.mu.Lock()
				h.rendered[i] = &template.Result{Content: h.rendered[i].Content, Deps: res.Deps, Data: res.Data}
				h.mu.Unlock()
				continue
			}
		}
		if err == nil {
			err = h.apply(i, t, res)
			if err == nil {
				h.changed(t)
			} else if errors.Is(err, errUnchanged) {
				err = nil
			}
		}
		if h.ctx.Err() != nil {
			return
		}
		if err != nil {
			retry = min(max(retry*2, h.cfg.RetryBackoff), h.cfg.RetryMaxBackoff)
			h.logger.Warn("template data unavailable; keeping the rendered content", "template", t.DestPath, "error", err, "retry_in", retry)
			if h.sleep(retry) != nil {
				return
			}
			continue
		}
		retry = 0
	}
}

// quiesce renders t after a change, as wait { min max } asks: once its
// data has been quiet for min, or max after the first change however
// busy it stays (max 0: no bound); at once without a wait. Each change
// meanwhile renders again and restarts the quiet period, so a burst of
// writes is one render, and one change_mode.
func (h *templateHook) quiesce(t *structs.Template) (*template.Result, error) {
	w := h.wait(t)
	res, err := h.render(t)
	if w.Min <= 0 || err != nil {
		return res, err
	}
	var deadline <-chan time.Time
	if w.Max > 0 {
		timer := h.clock.NewTimer(w.Max)
		defer timer.Stop()
		deadline = timer.C()
	}
	for {
		ctx, cancel := context.WithCancel(h.ctx)
		changed := make(chan error, 1)
		go func() { changed <- template.Watch(ctx, h.src, res.Deps) }()
		quiet := h.clock.NewTimer(w.Min)
		var werr error
		timedOut := false
		select {
		case <-quiet.C():
			timedOut = true
		case <-deadline:
			timedOut = true
		case werr = <-changed:
		}
		quiet.Stop()
		cancel()
		if timedOut {
			return res, nil
		}
		if werr != nil {
			// The source failed meanwhile (or the hook stops): what was
			// rendered last is the best there is.
			return res, h.ctx.Err()
		}
		if res, err = h.render(t); err != nil {
			return res, err
		}
	}
}

// wait is the wait { min max } t's changes render with: its own or the
// client's, within the client's bounds.
func (h *templateHook) wait(t *structs.Template) structs.TemplateWait {
	return h.cfg.WaitFor(t.Wait)
}

// changed applies t's change_mode after a random part of its splay.
func (h *templateHook) changed(t *structs.Template) {
	if t.Splay > 0 && h.sleep(rand.N(t.Splay)) != nil {
		return
	}
	switch t.ChangeMode {
	case structs.TemplateChangeModeRestart:
		h.tr.restartInPlace(fmt.Sprintf("Template with change_mode restart re-rendered: %s", t.DestPath))
	case structs.TemplateChangeModeSignal:
		if err := h.tr.Signal(t.ChangeSignal); err != nil && !errors.Is(err, ErrTaskNotRunning) {
			h.logger.Warn("signalling the task after a template change failed", "template", t.DestPath, "error", err)
		}
	case structs.TemplateChangeModeScript:
		h.runChangeScript(t.ChangeScript)
	}
}

// runChangeScript runs a template's change_script in the task as a
// script check runs its command (scriptExec: the task's environment and
// directory, killed at the timeout), and records how it went in
// upstream's words. A failure with fail_on_error kills the task, which
// then fails.
func (h *templateHook) runChangeScript(cs *structs.ChangeScript) {
	if cs == nil || !h.tr.running() {
		return // not running: its next start reads the new content anyway
	}
	ctx, cancel := context.WithTimeout(h.ctx, cmp.Or(cs.Timeout, structs.DefaultChangeScriptTimeout))
	defer cancel()
	_, code, err := scriptExec(h.tr)(ctx, cs.Command, cs.Args)
	now := h.tr.clock.Now()
	args := cs.Args
	if args == nil {
		args = []string{}
	}
	e := newEvent(structs.TaskHookFailed, now)
	switch {
	case err != nil:
		e.DisplayMessage = fmt.Sprintf("Template failed to run script %s with arguments %v on change: %v Exit code: %d", cs.Command, args, err, code)
	case code != 0:
		e.DisplayMessage = fmt.Sprintf("Template ran script %s with arguments %v on change but it exited with code code: %d", cs.Command, args, code)
	default:
		e.Type = structs.TaskHookMessage
		e.DisplayMessage = fmt.Sprintf("Template successfully ran script %s with arguments: %v. Exit code: %d", cs.Command, args, code)
		h.tr.EmitEvent(e)
		return
	}
	h.tr.EmitEvent(e)
	h.logger.Warn("template change_script failed", "command", cs.Command, "exit_code", code, "error", err, "fail_on_error", cs.FailOnError)
	if cs.FailOnError {
		k := newEvent(structs.TaskKilling, now)
		k.DisplayMessage = "Template script failed, task is being killed"
		k.FailsTask = true
		h.tr.Kill(k)
	}
}

// sleep waits d on the hook's clock, or returns the context's error.
func (h *templateHook) sleep(d time.Duration) error {
	timer := h.clock.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C():
		return nil
	case <-h.ctx.Done():
		return h.ctx.Err()
	}
}

// restartInPlace restarts the running task in place (not counted against
// its restart policy), as a template's or an identity's change_mode
// restart asks.
func (tr *TaskRunner) restartInPlace(reason string) {
	if !tr.running() || tr.killed() {
		// Not running: its next start reads the new content anyway.
		return
	}
	e := newEvent(structs.TaskRestartSignal, tr.clock.Now())
	e.RestartReason = reason
	e.DisplayMessage = reason
	tr.EmitEvent(e)
	select {
	case tr.restartCh <- restartRequest{reason: reason}:
	default:
	}
}

// writeRendered writes content to dst atomically with t's perms (octal),
// owned by its uid and gid when set (-1 keeps the client's).
func writeRendered(dst string, t *structs.Template, content []byte) error {
	perms := t.Perms
	mode, err := strconv.ParseUint(cmp.Or(perms, structs.DefaultTemplatePerms), 8, 32)
	if err != nil {
		return fmt.Errorf("perms %q: %w", perms, err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tmp := dst + ".tmp"
	if err := os.WriteFile(tmp, content, os.FileMode(mode)); err != nil {
		return err
	}
	// WriteFile's mode is filtered by the umask; perms is exact.
	if err := os.Chmod(tmp, os.FileMode(mode)); err != nil {
		return err
	}
	if t.Uid != nil || t.Gid != nil {
		uid, gid := -1, -1
		if t.Uid != nil {
			uid = *t.Uid
		}
		if t.Gid != nil {
			gid = *t.Gid
		}
		if err := os.Chown(tmp, uid, gid); err != nil {
			os.Remove(tmp)
			return fmt.Errorf("uid %d, gid %d: %w", uid, gid, err)
		}
	}
	return os.Rename(tmp, dst)
}

// parseEnvFile reads KEY=VALUE lines (blank lines and # comments
// skipped, surrounding quotes removed), as an env = true template's
// content is read.
func parseEnvFile(b []byte) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(strings.TrimPrefix(k, "export ")), strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		out[k] = v
	}
	return out
}
