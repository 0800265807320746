package command

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/cli"

	"github.com/nomad-edge/nomad/api"
)

// Bounds on what one answer may put on disk. An answer over its bound is
// cut there and the cut is listed in the index, so a runaway stream can
// neither fill the disk nor be mistaken for a whole answer.
const (
	debugMaxAnswer  = 256 << 20 // a JSON answer or a profile
	debugMaxStream  = 512 << 20 // the log or the event stream
	debugMaxErrBody = 4 << 10   // the text of a refusal, for the index
	// debugRequestTimeout bounds a one-shot request, so an agent that
	// stops answering cannot hold the bundle past its window for long.
	debugRequestTimeout = 30 * time.Second
)

// debugMiss is a file the bundle does not hold, or holds cut short, and
// why.
type debugMiss struct {
	Path   string
	Reason string
}

// debugBundle is the directory being filled and the record of what went
// into it. Its methods are safe for concurrent use.
type debugBundle struct {
	dir     string
	ui      cli.Ui
	verbose bool

	mu     sync.Mutex
	files  []string
	missed []debugMiss
}

func newDebugBundle(dir string, ui cli.Ui, verbose bool) *debugBundle {
	return &debugBundle{dir: dir, ui: ui, verbose: verbose}
}

// say prints a progress line; the UI is not safe for concurrent use.
func (b *debugBundle) say(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ui.Output(s)
}

func (b *debugBundle) captured(rel string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.files = append(b.files, filepath.ToSlash(rel))
	if b.verbose {
		b.ui.Output("    Captured " + filepath.ToSlash(rel))
	}
}

func (b *debugBundle) miss(rel, reason string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.missed = append(b.missed, debugMiss{Path: filepath.ToSlash(rel), Reason: reason})
	if b.verbose {
		b.ui.Output(fmt.Sprintf("    Not captured: %s: %s", filepath.ToSlash(rel), reason))
	}
}

// create opens rel's temporary file, making its directory.
func (b *debugBundle) create(rel string) (*os.File, error) {
	full := filepath.Join(b.dir, rel)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return nil, err
	}
	return os.Create(full + ".partial")
}

// commit moves rel's temporary file into place.
func (b *debugBundle) commit(rel string) error {
	full := filepath.Join(b.dir, rel)
	return os.Rename(full+".partial", full)
}

// writeJSON writes v, indented, to rel.
func (b *debugBundle) writeJSON(rel string, v any) error {
	buf, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		return err
	}
	f, err := b.create(rel)
	if err != nil {
		return err
	}
	_, err = f.Write(append(buf, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = b.commit(rel)
	}
	if err != nil {
		return err
	}
	b.captured(rel)
	return nil
}

// fetchOptions say how an answer is read.
type fetchOptions struct {
	// stream is for answers that only end when ctx does (the log, the
	// event stream): what arrived by then is the file.
	stream bool
	limit  int64
	// runs is how long the agent takes to answer by design (a CPU
	// profile's seconds), added to debugRequestTimeout.
	runs time.Duration
}

// fileWriter remembers its write error, so that a copy's failure can be
// told apart: writing (the bundle is broken) from reading (one answer is).
type fileWriter struct {
	f   *os.File
	err error
}

func (w *fileWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if err != nil {
		w.err = err
	}
	return n, err
}

// fetch GETs path and streams the answer into rel; ok says it did. What
// the agent cannot or will not answer is listed as missed; the error is
// only for the local disk failing, which ends the bundle.
func (b *debugBundle) fetch(ctx context.Context, client *api.Client, rel, path string, o fetchOptions) error {
	_, err := b.fetchOK(ctx, client, rel, path, o)
	return err
}

// fetchOK is fetch, saying whether the file was written.
func (b *debugBundle) fetchOK(ctx context.Context, client *api.Client, rel, path string, o fetchOptions) (ok bool, err error) {
	if !o.stream {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, debugRequestTimeout+o.runs)
		defer cancel()
	}
	resp, err := client.Raw(ctx, api.RawRequest{Method: http.MethodGet, Path: path})
	if err != nil {
		b.miss(rel, fmt.Sprintf("GET %s: %v", path, err))
		return false, nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, debugMaxErrBody))
		b.miss(rel, fmt.Sprintf("GET %s: Unexpected response code: %d (%s)", path, resp.StatusCode, strings.TrimSpace(string(msg))))
		return false, nil
	}
	f, err := b.create(rel)
	if err != nil {
		return false, err
	}
	w := &fileWriter{f: f}
	n, copyErr := io.Copy(w, io.LimitReader(resp.Body, o.limit+1))
	truncated := n > o.limit
	if truncated {
		copyErr = f.Truncate(o.limit)
		w.err = copyErr
	}
	if cerr := f.Close(); w.err == nil && cerr != nil {
		w.err = cerr
	}
	if w.err != nil {
		_ = os.Remove(f.Name())
		return false, w.err
	}
	switch {
	case copyErr == nil:
	case o.stream && ctx.Err() != nil:
		// The window closed: the stream ends here, as it should.
	case o.stream:
		b.miss(rel, fmt.Sprintf("GET %s: the stream broke off, the file holds what came before: %v", path, copyErr))
	default:
		_ = os.Remove(f.Name())
		b.miss(rel, fmt.Sprintf("GET %s: reading the answer: %v", path, copyErr))
		return false, nil
	}
	if err := b.commit(rel); err != nil {
		return false, err
	}
	b.captured(rel)
	if truncated {
		b.miss(rel, fmt.Sprintf("cut at %d bytes: the answer was longer", o.limit))
	}
	return true, nil
}

// debugIndex is index.json: what the bundle holds and what it does not.
type debugIndex struct {
	Interrupted bool
	Files       []string
	NotCaptured []debugMiss
}

// index returns the record so far, sorted.
func (b *debugBundle) index(interrupted bool) debugIndex {
	b.mu.Lock()
	defer b.mu.Unlock()
	ix := debugIndex{Interrupted: interrupted, Files: append([]string(nil), b.files...), NotCaptured: append([]debugMiss(nil), b.missed...)}
	sort.Strings(ix.Files)
	sort.SliceStable(ix.NotCaptured, func(i, j int) bool { return ix.NotCaptured[i].Path < ix.NotCaptured[j].Path })
	return ix
}

// debugCapture is one run of `operator debug`: the agent to ask, the
// validated flags and the bundle to fill.
type debugCapture struct {
	client  *api.Client
	opts    *debugOptions
	bundle  *debugBundle
	targets []debugTarget
	flags   map[string]string
	// allNamespaces says the namespaced lists are asked for every
	// namespace, which is what a debug bundle wants unless the operator
	// named one.
	allNamespaces bool
}

// query builds an API path with the capture's common parameters.
func (d *debugCapture) query(path string, namespaced bool, params url.Values) string {
	if params == nil {
		params = url.Values{}
	}
	if d.opts.stale {
		params.Set("stale", "")
	}
	if namespaced && d.allNamespaces {
		params.Set("namespace", "*")
	}
	if len(params) == 0 {
		return path
	}
	return path + "?" + params.Encode()
}

// run fills the bundle: the cluster's state once, then for the window
// (-duration, or until interrupt ends) the log, the profiles, the event
// stream and the state every -interval; then the index. The error is the
// local disk failing.
func (d *debugCapture) run(interrupt context.Context) error {
	b := d.bundle
	start := time.Now()
	if err := b.writeJSON("cluster/cli-flags.json", d.flags); err != nil {
		return err
	}
	for _, f := range []struct{ rel, path string }{
		{"cluster/agent-self.json", "/v1/agent/self"},
		{"cluster/members.json", "/v1/agent/members"},
		{"cluster/leader.json", "/v1/status/leader"},
		{"cluster/namespaces.json", "/v1/namespaces"},
		{"cluster/regions.json", "/v1/regions"},
		{"cluster/nodes.json", "/v1/nodes"},
	} {
		// Taken whatever Ctrl-C says: without them the rest is hard to read.
		path := d.query(f.path, false, url.Values{"pretty": {"true"}})
		if err := b.fetch(context.Background(), d.client, f.rel, path, fetchOptions{limit: debugMaxAnswer}); err != nil {
			return err
		}
	}

	window, cancel := context.WithDeadline(interrupt, start.Add(d.opts.duration))
	defer cancel()
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	do := func(fn func() error) {
		wg.Go(func() {
			if err := fn(); err != nil {
				errOnce.Do(func() { firstErr = err })
				cancel()
			}
		})
	}
	for _, t := range d.targets {
		do(func() error { return d.captureTarget(window, t) })
	}
	if len(d.opts.eventTopics) > 0 {
		do(func() error { return d.captureEvents(window) })
	}
	do(func() error { return d.captureProfiles(interrupt, window) })
	do(func() error { return d.captureSnapshots(interrupt) })
	do(func() error { return d.captureIntervals(window, start) })
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	ix := b.index(interrupt.Err() != nil)
	if err := b.writeJSON("index.json", ix); err != nil {
		return err
	}
	return writeDebugIndexHTML(b.dir, ix)
}

// targetDir is the target's directory in the bundle.
func targetDir(t debugTarget) string { return filepath.Join(t.kind, t.id) }

// captureTarget writes the target's host facts and its log for the window.
func (d *debugCapture) captureTarget(window context.Context, t debugTarget) error {
	dir := targetDir(t)
	id := url.Values{t.param(): {t.id}}
	if err := d.bundle.fetch(window, d.client, filepath.Join(dir, "agent-host.json"), d.query("/v1/agent/host", false, id), fetchOptions{limit: debugMaxAnswer}); err != nil {
		return err
	}
	if window.Err() != nil {
		d.bundle.miss(filepath.Join(dir, "monitor.log"), "the capture was interrupted before the log was asked for")
		return nil
	}
	params := url.Values{t.param(): {t.id}, "log_level": {d.opts.logLevel}, "plain": {"true"}}
	return d.bundle.fetch(window, d.client, filepath.Join(dir, "monitor.log"), "/v1/agent/monitor?"+params.Encode(), fetchOptions{stream: true, limit: debugMaxStream})
}

// captureEvents writes the event stream of -event-topic for the window,
// newline-delimited as the endpoint sends it.
func (d *debugCapture) captureEvents(window context.Context) error {
	params := url.Values{"topic": d.opts.eventTopics}
	if d.opts.eventIndex > 0 {
		params.Set("index", fmt.Sprint(d.opts.eventIndex))
	}
	if d.allNamespaces {
		params.Set("namespace", "*")
	}
	return d.bundle.fetch(window, d.client, "cluster/eventstream.json", "/v1/event/stream?"+params.Encode(), fetchOptions{stream: true, limit: debugMaxStream})
}

// pprofSeconds is -pprof-duration as the profile endpoint takes it: whole
// seconds, at least one.
func (d *debugCapture) pprofSeconds() string {
	return fmt.Sprint(max(1, int(math.Ceil(d.opts.pprofDuration.Seconds()))))
}

// pprofFetch is how a CPU profile or trace is read: it takes its seconds
// before the first byte.
func (d *debugCapture) pprofFetch() fetchOptions {
	return fetchOptions{limit: debugMaxAnswer, runs: max(time.Second, d.opts.pprofDuration)}
}

// pprofPath is the profile endpoint for target t with the query q: every
// target is profiled, named by its node_id or server_id (the agent asked
// passes the request on).
func pprofPath(t debugTarget, profile string, q url.Values) string {
	q.Set(t.param(), t.id)
	return "/v1/agent/pprof/" + profile + "?" + q.Encode()
}

// captureProfiles takes CPU profiles of each profiled target one after the
// other (a process runs one CPU profile at a time), -pprof-interval apart,
// until the window closes. A profile under way is let finish unless
// interrupted, so the last one is whole.
func (d *debugCapture) captureProfiles(interrupt, window context.Context) error {
	targets := d.targets
	refused := map[string]bool{}
	for round := 0; window.Err() == nil; round++ {
		asked := false
		for _, t := range targets {
			if refused[targetDir(t)] || window.Err() != nil {
				continue
			}
			asked = true
			rel := filepath.Join(targetDir(t), fmt.Sprintf("profile_%04d.prof", round))
			ok, err := d.bundle.fetchOK(interrupt, d.client, rel, pprofPath(t, "profile", url.Values{"seconds": {d.pprofSeconds()}}), d.pprofFetch())
			if err != nil {
				return err
			}
			// A refusal (profiles off, no permission) will not change
			// within the window: ask once, not every round.
			if !ok {
				refused[targetDir(t)] = true
			}
		}
		if !asked {
			return nil
		}
		select {
		case <-window.Done():
		case <-time.After(d.opts.pprofInterval):
		}
	}
	return nil
}

// debugSnapshots are the profiles taken once per target, after the trace.
var debugSnapshots = []struct{ file, profile, debug string }{
	{"heap.prof", "heap", "0"},
	{"allocs.prof", "allocs", "0"},
	{"threadcreate.prof", "threadcreate", "0"},
	{"goroutine.prof", "goroutine", "0"},
	{"goroutine-debug1.txt", "goroutine", "1"},
	{"goroutine-debug2.txt", "goroutine", "2"},
}

// captureSnapshots takes each profiled target's trace (-pprof-duration
// long) and its heap, allocs, threadcreate and goroutine profiles.
func (d *debugCapture) captureSnapshots(interrupt context.Context) error {
	for _, t := range d.targets {
		dir := targetDir(t)
		if err := d.bundle.fetch(interrupt, d.client, filepath.Join(dir, "trace.prof"), pprofPath(t, "trace", url.Values{"seconds": {d.pprofSeconds()}}), d.pprofFetch()); err != nil {
			return err
		}
		for _, s := range debugSnapshots {
			path := pprofPath(t, s.profile, url.Values{"debug": {s.debug}})
			if err := d.bundle.fetch(interrupt, d.client, filepath.Join(dir, s.file), path, fetchOptions{limit: debugMaxAnswer}); err != nil {
				return err
			}
		}
	}
	return nil
}

// captureIntervals writes interval/NNNN at start + N×-interval for each
// such time inside the window.
func (d *debugCapture) captureIntervals(window context.Context, start time.Time) error {
	deadline, _ := window.Deadline()
	for i := 0; ; i++ {
		at := start.Add(time.Duration(i) * d.opts.interval)
		if !at.Before(deadline) {
			return nil
		}
		if wait := time.Until(at); wait > 0 {
			select {
			case <-window.Done():
				return nil
			case <-time.After(wait):
			}
		}
		if window.Err() != nil {
			return nil
		}
		d.bundle.say(fmt.Sprintf("    Capture interval %04d", i))
		if err := d.captureInterval(intervalDir(i)); err != nil {
			return err
		}
	}
}

// captureInterval writes one interval's cluster state into dir.
func (d *debugCapture) captureInterval(dir string) error {
	pretty := func() url.Values { return url.Values{"pretty": {"true"}} }
	for _, f := range []struct {
		file, path string
		namespaced bool
	}{
		{"jobs.json", "/v1/jobs", true},
		{"allocations.json", "/v1/allocations", true},
		{"evaluations.json", "/v1/evaluations", true},
		{"deployments.json", "/v1/deployments", true},
		{"nodes.json", "/v1/nodes", false},
		{"metrics.json", "/v1/metrics", false},
		{"operator-raft.json", "/v1/operator/raft/configuration", false},
		{"operator-scheduler.json", "/v1/operator/scheduler/configuration", false},
		{"operator-autopilot-health.json", "/v1/operator/autopilot/health", false},
	} {
		// Each interval is taken whole once begun: it is one moment of
		// the cluster, not cut off by Ctrl-C.
		if err := d.bundle.fetch(context.Background(), d.client, filepath.Join(dir, f.file), d.query(f.path, f.namespaced, pretty()), fetchOptions{limit: debugMaxAnswer}); err != nil {
			return err
		}
	}
	return nil
}
