package docker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/internal/stats"
	"github.com/nomad-edge/nomad/drivers/internal/tasks"
	"github.com/nomad-edge/nomad/helper/clock"
)

// Name is the driver name jobs use in a task's `driver` field.
const Name = "docker"

// HandleVersion is the layout version of the DriverState this driver writes.
const HandleVersion = 1

const (
	// fingerprintTimeout bounds a ping: an engine that does not answer
	// within it is as good as absent for placing work.
	fingerprintTimeout = 5 * time.Second
	// defaultKillWait bounds how long StopTask waits for a container to
	// stop after SIGKILL.
	defaultKillWait = 10 * time.Second
	// apiTimeout bounds a single non-streaming engine call.
	apiTimeout = time.Minute
	// retryWait is how long the exit watcher waits before asking again
	// when the engine did not answer (restarting, for one).
	retryWait = time.Second
)

// Driver is the docker driver. It is safe for concurrent use.
type Driver struct {
	logger hclog.Logger
	pc     pluginConfig
	api    *client
	tasks  *tasks.Set[*taskHandle]
	clock  clock.Clock
	images *imageRefs

	killWait time.Duration
}

var (
	_ drivers.Driver             = (*Driver)(nil)
	_ drivers.CapabilityReporter = (*Driver)(nil)
	_ drivers.TaskFinder         = (*Driver)(nil)
	_ drivers.Signaler           = (*Driver)(nil)
)

// New builds the driver from the agent's plugin config. It does not contact
// the engine: Fingerprint does, so that an engine started after the agent is
// picked up.
func New(opts drivers.Options) (*Driver, error) {
	pc, err := decodePluginConfig(opts.Config)
	if err != nil {
		return nil, fmt.Errorf("plugin %q config: %w", Name, err)
	}
	api, err := newClient(pc.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("plugin %q config: %w", Name, &drivers.ConfigError{Key: "endpoint", Err: err})
	}
	d := &Driver{
		logger:   opts.LoggerOrNull().Named(Name),
		pc:       pc,
		api:      api,
		tasks:    tasks.NewSet[*taskHandle](),
		clock:    clock.Real(),
		killWait: defaultKillWait,
	}
	d.images = newImageRefs(d)
	return d, nil
}

// Factory is New as a drivers.Factory.
func Factory(opts drivers.Options) (drivers.Driver, error) { return New(opts) }

// Name implements drivers.Driver.
func (d *Driver) Name() string { return Name }

// Capabilities implements drivers.CapabilityReporter: tasks see the image as
// their root, with the task directories mounted at /alloc, /local, /secrets.
func (d *Driver) Capabilities() drivers.Capabilities {
	return drivers.Capabilities{FSIsolation: drivers.FSIsolationImage, NetNamespace: true, NetworkFiles: true}
}

// Fingerprint implements drivers.Driver: detected when the engine answers a
// ping, with its version as attributes.
func (d *Driver) Fingerprint() *drivers.Fingerprint {
	ctx, cancel := context.WithTimeout(context.Background(), fingerprintTimeout)
	defer cancel()
	if err := d.api.ping(ctx); err != nil {
		return &drivers.Fingerprint{HealthDescription: fmt.Sprintf("%s: failed to connect to docker daemon at %s: %v",
			drivers.HealthDescUndetected, d.pc.Endpoint, err)}
	}
	attrs := map[string]string{"driver." + Name: "1"}
	if v, err := d.api.version(ctx); err == nil {
		attrs["driver.docker.version"] = v.Version
		attrs["driver.docker.os_type"] = v.Os
		for _, c := range v.Components {
			if c.Name == "Podman Engine" {
				attrs["driver.docker.podman.version"] = c.Version
			}
		}
	}
	if d.pc.AllowPrivileged {
		attrs["driver.docker.privileged.enabled"] = "true"
	}
	if d.pc.VolumesEnabled {
		attrs["driver.docker.volumes.enabled"] = "true"
	}
	return &drivers.Fingerprint{Detected: true, Healthy: true, HealthDescription: drivers.HealthDescHealthy, Attributes: attrs}
}

// ErrNoNetNSJoin is why a task of a bridge-mode group fails on Docker
// Engine: only Podman's compatible API takes a namespace path as the
// container's network mode.
var ErrNoNetNSJoin = errors.New(`the docker driver joins an allocation's network namespace (network mode "bridge") only through Podman's API; Docker Engine cannot`)

// joinNetNS puts a task of a bridge-mode group in the allocation's
// namespace: network mode "ns:<path>", which Podman's API takes. The task
// may not choose a network_mode of its own there.
func (d *Driver) joinNetNS(cfg *drivers.TaskConfig, tc *taskConfig) error {
	if cfg.NetNSPath == "" {
		return nil
	}
	if tc.NetworkMode != "" {
		return &drivers.ConfigError{Key: "network_mode", Err: errors.New(`cannot be set in a group whose network is in mode "bridge": the task joins the allocation's namespace`)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	v, err := d.api.version(ctx)
	if err != nil {
		return drivers.NewRecoverableError(fmt.Errorf("asking the engine whether it is Podman: %w", err), true)
	}
	if !slices.ContainsFunc(v.Components, func(c versionComponent) bool { return c.Name == "Podman Engine" }) {
		return ErrNoNetNSJoin
	}
	tc.NetworkMode = "ns:" + cfg.NetNSPath
	return nil
}

// StartTask implements drivers.Driver.
func (d *Driver) StartTask(cfg *drivers.TaskConfig) (*drivers.TaskHandle, error) {
	if cfg == nil || cfg.ID == "" {
		return nil, errors.New("starting task: a task config with an ID is required")
	}
	tc, err := decodeTaskConfig(cfg.Config, d.pc)
	if err == nil {
		err = d.joinNetNS(cfg, &tc)
	}
	if err != nil {
		return nil, fmt.Errorf("task %q: %w", cfg.ID, err)
	}
	if err := d.tasks.Reserve(cfg.ID); err != nil {
		return nil, err
	}
	h, err := d.start(cfg, tc)
	if err != nil {
		d.tasks.Release(cfg.ID)
		return nil, fmt.Errorf("starting task %q: %w", cfg.ID, err)
	}
	d.tasks.Fill(cfg.ID, h)
	handle, err := drivers.NewTaskHandle(HandleVersion, cfg, h.StartedAt(), h.state)
	if err != nil {
		return nil, err
	}
	d.logger.Debug("started task", "task_id", cfg.ID, "container_id", h.state.ContainerID, "image", tc.Image)
	return handle, nil
}

// start makes sure the image is there, creates and starts the container and
// begins following its logs and its exit.
func (d *Driver) start(cfg *drivers.TaskConfig, tc taskConfig) (*taskHandle, error) {
	imageID, err := d.ensureImage(cfg, tc)
	if err != nil {
		return nil, err
	}
	spec, err := buildSpec(cfg, tc, imageID)
	if err != nil {
		return nil, err
	}
	id, err := d.create(cfg, spec)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	if err := d.api.startContainer(ctx, id); err != nil {
		_ = d.api.removeContainer(ctx, id)
		return nil, drivers.NewRecoverableError(fmt.Errorf("starting container: %w", err), true)
	}
	d.images.acquire(imageID)
	h := d.newHandle(cfg, taskState{ContainerID: id, ImageID: imageID}, d.clock.Now())
	go d.watchExit(h)
	d.follow(h, cfg, time.Time{})
	return h, nil
}

// create creates the container. A container of the same name left by an
// earlier attempt that was never recorded is removed first: the client asks
// FindTask for running orphans before it starts a task, so what is left is
// a corpse.
func (d *Driver) create(cfg *drivers.TaskConfig, spec *containerSpec) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	name := containerName(cfg)
	id, err := d.api.createContainer(ctx, name, spec)
	if isStatus(err, http.StatusConflict) {
		d.logger.Info("removing a stale container of the same name", "name", name)
		if err := d.api.removeContainer(ctx, name); err != nil {
			return "", fmt.Errorf("removing stale container %s: %w", name, err)
		}
		id, err = d.api.createContainer(ctx, name, spec)
	}
	if err != nil {
		return "", drivers.NewRecoverableError(fmt.Errorf("creating container: %w", err), !isStatus(err, http.StatusBadRequest))
	}
	return id, nil
}

// ensureImage returns the ID of tc's image, pulling it when absent or when
// the task asks for force_pull.
func (d *Driver) ensureImage(cfg *drivers.TaskConfig, tc taskConfig) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	if tc.Load != "" {
		return d.load(ctx, cfg, tc)
	}
	if !tc.ForcePull {
		info, err := d.api.inspectImage(ctx, tc.Image)
		if err == nil {
			return info.ID, nil
		}
		if !errors.Is(err, ErrNoSuchImage) {
			return "", drivers.NewRecoverableError(fmt.Errorf("inspecting image %s: %w", tc.Image, err), true)
		}
	}
	if err := d.pull(cfg, tc); err != nil {
		return "", drivers.NewRecoverableError(fmt.Errorf("pulling image %s: %w", tc.Image, err), true)
	}
	info, err := d.api.inspectImage(ctx, tc.Image)
	if err != nil {
		return "", drivers.NewRecoverableError(fmt.Errorf("inspecting pulled image %s: %w", tc.Image, err), true)
	}
	return info.ID, nil
}

// load loads the image from an archive in the task directory (`docker
// save` output, usually fetched by an artifact), for nodes that reach no
// registry.
func (d *Driver) load(ctx context.Context, cfg *drivers.TaskConfig, tc taskConfig) (string, error) {
	f, err := os.Open(filepath.Join(cfg.TaskDir, tc.Load))
	if err != nil {
		return "", &drivers.ConfigError{Key: "load", Err: err}
	}
	defer f.Close()
	if err := d.api.loadImage(ctx, f); err != nil {
		return "", drivers.NewRecoverableError(fmt.Errorf("loading image from %s: %w", tc.Load, err), true)
	}
	info, err := d.api.inspectImage(ctx, tc.Image)
	if err != nil {
		return "", fmt.Errorf("image %s is not in the archive %s: %w", tc.Image, tc.Load, err)
	}
	return info.ID, nil
}

// pull pulls the image, reporting progress on the task, and gives up when
// the engine reports no progress for pull_activity_timeout: a stalled LTE
// link must fail the start (and be retried) rather than hang it.
func (d *Driver) pull(cfg *drivers.TaskConfig, tc taskConfig) error {
	cfg.Emit("Downloading image")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stalled := d.clock.AfterFunc(d.pc.PullActivityTimeout, cancel)
	defer stalled.Stop()
	var mu sync.Mutex
	lastReport := d.clock.Now()
	err := d.api.pullImage(ctx, tc.Image, tc.Auth, func(p pullProgress) {
		stalled.Reset(d.pc.PullActivityTimeout)
		mu.Lock()
		defer mu.Unlock()
		if now := d.clock.Now(); now.Sub(lastReport) >= 10*time.Second && p.ProgressDetail.Total > 0 {
			lastReport = now
			cfg.Emit(fmt.Sprintf("Image %s pull progress: %s %d/%d bytes", tc.Image, p.Status, p.ProgressDetail.Current, p.ProgressDetail.Total))
		}
	})
	if ctx.Err() != nil && err != nil {
		return fmt.Errorf("no progress for %s (pull_activity_timeout): %w", d.pc.PullActivityTimeout, err)
	}
	return err
}

// newHandle builds the handle of a container; the caller starts watchExit
// once the handle is tracked.
func (d *Driver) newHandle(cfg *drivers.TaskConfig, st taskState, startedAt time.Time) *taskHandle {
	h := &taskHandle{
		Task:     tasks.New(cfg.ID, cfg.Name, startedAt),
		d:        d,
		logger:   d.logger.With("task_id", cfg.ID, "container_id", shortID(st.ContainerID)),
		state:    st,
		logsDone: make(chan struct{}),
		cpu:      stats.NewSampler(startedAt),
	}
	return h
}

// follow copies the container's log stream into the task's log files from
// since, in this process: no helper process per task.
func (d *Driver) follow(h *taskHandle, cfg *drivers.TaskConfig, since time.Time) {
	ctx, cancel := context.WithCancel(context.Background())
	h.stopLogs = cancel
	stdout, err1 := drivers.OpenTaskLog(cfg.StdoutPath)
	stderr, err2 := drivers.OpenTaskLog(cfg.StderrPath)
	if err := errors.Join(err1, err2); err != nil {
		h.logger.Warn("cannot open log files, the task's output is lost", "error", err)
	}
	go func() {
		defer close(h.logsDone)
		defer closeAll(stdout, stderr)
		for attempt := 1; ; attempt++ {
			wrote, err := d.api.followLogs(ctx, h.state.ContainerID, since, writerOrDiscard(stdout), writerOrDiscard(stderr))
			if err == nil || ctx.Err() != nil || errors.Is(err, ErrNoSuchContainer) {
				return
			}
			if wrote {
				// Resume after the last line the files have, as a
				// restarted client does.
				since, attempt = logsSince(cfg.StdoutPath, cfg.StderrPath), 1
			}
			if attempt >= logRetries {
				h.logger.Warn("following container logs failed", "error", err, "attempts", attempt)
				return
			}
			h.logger.Debug("following container logs failed, retrying", "error", err)
			if !clock.Sleep(d.clock, retryWait, ctx.Done()) {
				return
			}
		}
	}()
}

// logRetries is how many times in a row a failed log stream is opened
// again before the task's output is given up: Podman fails a stream opened
// as the container exits, and the retry, made once it has stopped, reads
// all of it.
const logRetries = 5

// watchExit records the container's exit. The log stream ends when the
// container stops, so the wait call is made only then and answers at once:
// one open connection per running task instead of two, which is most of
// what a task costs the agent. A stream that ended early (an engine
// restart, a log driver that cannot be read back) falls back to a blocking
// wait, retried until the container is seen stopped or gone.
func (d *Driver) watchExit(h *taskHandle) {
	if !d.awaitStop(h) {
		return
	}
	for {
		code, err := d.api.waitContainer(context.Background(), h.state.ContainerID)
		if errors.Is(err, ErrNoSuchContainer) {
			h.Exit(&drivers.ExitResult{Err: fmt.Errorf("container %s disappeared", shortID(h.state.ContainerID))}, d.clock.Now())
			return
		}
		if err == nil {
			h.Exit(d.exitResult(h, code), d.clock.Now())
			h.logger.Debug("container exited", "exit_code", code)
			return
		}
		h.logger.Debug("waiting for container failed, retrying", "error", err)
		if !clock.Sleep(d.clock, retryWait, h.Done()) {
			return
		}
	}
}

// stoppedPoll is how often a task whose log stream is still open checks
// that its container still runs.
const stoppedPoll = 5 * time.Second

// awaitStop returns once the log stream has ended or inspect shows the
// container no longer running: an engine may keep the log stream of a
// finished container open (seen with Podman under load), and the exit must
// not wait on it. False means the handle was closed.
func (d *Driver) awaitStop(h *taskHandle) bool {
	for {
		t := d.clock.NewTimer(stoppedPoll)
		select {
		case <-h.logsDone:
			t.Stop()
			return true
		case <-h.Done():
			t.Stop()
			return false
		case <-t.C():
		}
		ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
		info, err := d.api.inspectContainer(ctx, h.state.ContainerID)
		cancel()
		if errors.Is(err, ErrNoSuchContainer) || (err == nil && !info.State.Running) {
			return true
		}
	}
}

// exitResult completes an exit code with what inspect knows (the OOM killer).
func (d *Driver) exitResult(h *taskHandle, code int) *drivers.ExitResult {
	res := &drivers.ExitResult{ExitCode: code}
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	if info, err := d.api.inspectContainer(ctx, h.state.ContainerID); err == nil {
		res.OOMKilled = info.State.OOMKilled
		if info.State.Error != "" && code != 0 {
			res.Err = errors.New(info.State.Error)
		}
	}
	return res
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
