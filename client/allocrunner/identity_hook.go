package allocrunner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/helper/clock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// IdentitySigner asks the servers to sign a task's workload identity
// (Alloc.SignIdentities, with the node's secret): the default one for an
// empty name, else the named one. It may block on the network; an error
// is retried.
type IdentitySigner interface {
	SignIdentity(allocID, task, name string) (*structs.SignedWorkloadIdentity, error)
}

// ErrNoIdentitySigner is a task's start error when its identity block
// asks for the token and the client has no way to get one signed.
var ErrNoIdentitySigner = errors.New("the client cannot have workload identities signed")

// identityTokenFile is where `identity { file = true }` writes the
// default identity, under the task's secrets directory, as upstream; a
// named one goes to nomad_<name>.jwt.
const identityTokenFile = "nomad_token"

// identityEnvVar is the default identity's environment variable; a named
// one's is NOMAD_TOKEN_<name>, as upstream.
const identityEnvVar = "NOMAD_TOKEN"

// Retry delays of a failed renewal: doubling from the first to the last,
// never past the identity's expiry.
const (
	identityRetryMin = time.Second
	identityRetryMax = time.Minute
)

// identityHook holds a task's default workload identity and hands it to
// the task as its identity block asks: NOMAD_TOKEN in the environment of
// each start (env), secrets/nomad_token (file). It is only active for a
// task with such a block, so that a task without one never waits on the
// servers to start, which matters on a node that is cut off.
//
// prestart gets the identity signed before the first start, and again
// when the one held has expired; a held identity that is still valid is
// used while the servers cannot be reached. Once held, the identity is
// renewed when half of its life (the block's ttl) is gone, the file is
// rewritten, and the block's change_mode applied: noop (the environment
// changes at the next start), restart in place, or signal. A renewal that
// fails is retried with backoff until it succeeds or the task runner
// stops.
type identityHook struct {
	logger hclog.Logger
	clock  clock.Clock
	signer IdentitySigner
	spec   *structs.WorkloadIdentity // nil: inactive
	// name is the named identity this hook holds, "" for the default.
	name string
	// envVar and file are where the block hands it over.
	envVar, file string
	// forTemplates is set when only templates use the identity: a start
	// does not wait for it, since they can render from their kept data.
	forTemplates bool
	allocID      string
	task         string
	secrets      string // the task's secrets directory
	// persist stores a newly signed identity; nil stores nothing.
	persist func(*structs.SignedWorkloadIdentity)
	// renewed applies the block's change_mode after a renewal; nil does
	// nothing.
	renewed func(*structs.WorkloadIdentity)

	mu       sync.Mutex
	signed   *structs.SignedWorkloadIdentity
	signedAt time.Time
	timer    clock.Timer
	retry    time.Duration
	stopped  bool
}

func newIdentityHook(cfg taskRunnerConfig) *identityHook {
	var spec *structs.WorkloadIdentity
	forTemplates := false
	if w := cfg.task.Identity; w != nil && (w.Env || w.File) {
		spec = w
	} else if len(cfg.task.Templates) > 0 {
		// Templates read variables with the identity, handed to no one.
		spec = &structs.WorkloadIdentity{Name: structs.WorkloadIdentityDefaultName}
		forTemplates = true
	}
	h := newIdentityHookFor(cfg, spec, "")
	h.forTemplates = forTemplates
	return h
}

// newNamedIdentityHooks is a hook for each of the task's named identity
// blocks that hands its identity to the task (env or file).
func newNamedIdentityHooks(cfg taskRunnerConfig) []*identityHook {
	var out []*identityHook
	for _, w := range cfg.task.Identities {
		if w.Env || w.File {
			out = append(out, newIdentityHookFor(cfg, w, w.Name))
		}
	}
	return out
}

// newIdentityHookFor is the hook of one identity block, spec (nil:
// inactive), the default one for an empty name.
func newIdentityHookFor(cfg taskRunnerConfig, spec *structs.WorkloadIdentity, name string) *identityHook {
	logger, clk, signer, alloc, task, db := cfg.logger, cfg.clock, cfg.identities, cfg.alloc, cfg.task, cfg.db
	secrets := cfg.allocDir.TaskDir(task.Name).SecretsDir
	h := &identityHook{
		logger: logger.Named("identity"), clock: clk, signer: signer, allocID: alloc.ID, task: task.Name, secrets: secrets,
		spec: spec, name: name, envVar: identityEnvVar, file: identityTokenFile,
	}
	if name != "" {
		h.logger = h.logger.With("identity", name)
		h.envVar, h.file = identityEnvVar+"_"+name, "nomad_"+name+".jwt"
	}
	if db != nil {
		h.persist = func(s *structs.SignedWorkloadIdentity) {
			if err := db.PutTaskIdentity(alloc.ID, task.Name, s); err != nil {
				h.logger.Warn("persisting the task's workload identity failed", "error", err)
			}
		}
	}
	return h
}

// restore hands the hook an identity an earlier client process persisted,
// so that a task restarted while the servers cannot be reached still has
// one until it expires.
func (h *identityHook) restore(s *structs.SignedWorkloadIdentity) {
	if h.spec == nil || s == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.signed, h.signedAt = s, h.clock.Now()
	// A task that survived the restart is re-attached, not started, so
	// prestart does not run for it: renewals start here.
	if h.timer == nil && !h.stopped {
		h.timer = h.clock.AfterFunc(h.renewInLocked(h.signedAt), h.renew)
	}
}

// prestart makes sure the task holds a valid identity and its file is
// written, before each start; its error is the start's.
func (h *identityHook) prestart() error {
	if h.spec == nil {
		return nil
	}
	h.mu.Lock()
	held := h.signed
	h.mu.Unlock()
	now := h.clock.Now()
	if held == nil || !now.Before(held.Expiration) {
		fresh, err := h.sign()
		if err != nil && h.forTemplates {
			// The templates render from their kept data meanwhile;
			// renewals keep trying.
			h.logger.Warn("signing the task's workload identity failed; templates use their kept data", "error", err)
		} else if err != nil {
			return fmt.Errorf("signing the task's workload identity: %w", err)
		} else {
			held = fresh
		}
	}
	if err := h.writeFile(held); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.timer == nil && !h.stopped {
		h.timer = h.clock.AfterFunc(h.renewInLocked(now), h.renew)
	}
	return nil
}

// sign gets a new identity from the servers and keeps it.
func (h *identityHook) sign() (*structs.SignedWorkloadIdentity, error) {
	if h.signer == nil {
		return nil, ErrNoIdentitySigner
	}
	s, err := h.signer.SignIdentity(h.allocID, h.task, h.name)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.signed, h.signedAt = s, h.clock.Now()
	h.mu.Unlock()
	if h.persist != nil {
		h.persist(s)
	}
	return s, nil
}

// renewInLocked is how long from now until the held identity is renewed:
// when half of its life from signedAt is gone.
func (h *identityHook) renewInLocked(now time.Time) time.Duration {
	if h.signed == nil {
		return 0
	}
	half := h.signedAt.Add(h.signed.Expiration.Sub(h.signedAt) / 2)
	return max(half.Sub(now), 0)
}

// renew runs on the renewal timer: it signs a new identity and rewrites
// the file, or retries later.
func (h *identityHook) renew() {
	next := time.Duration(0)
	s, err := h.sign()
	if err == nil {
		err = h.writeFile(s)
	}
	if err == nil && h.renewed != nil && !h.forTemplates {
		h.renewed(h.spec)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return
	}
	now := h.clock.Now()
	if err != nil {
		h.retry = min(max(h.retry*2, identityRetryMin), identityRetryMax)
		next = h.retry
		h.logger.Warn("renewing the task's workload identity failed; retrying", "error", err, "in", next)
	} else {
		h.retry = 0
		next = h.renewInLocked(now)
	}
	h.timer = h.clock.AfterFunc(next, h.renew)
}

// writeFile writes the token to the secrets directory (nomad_token, or
// nomad_<name>.jwt) when the block asks, atomically, so that the task
// never reads half a token.
func (h *identityHook) writeFile(s *structs.SignedWorkloadIdentity) error {
	if !h.spec.File || s == nil {
		return nil
	}
	dst := filepath.Join(h.secrets, h.file)
	tmp := dst + ".tmp"
	if err := os.WriteFile(tmp, []byte(s.JWT), 0o600); err != nil {
		return fmt.Errorf("writing the workload identity to secrets/%s: %w", h.file, err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return fmt.Errorf("writing the workload identity to secrets/%s: %w", h.file, err)
	}
	return nil
}

// setEnv sets NOMAD_TOKEN (NOMAD_TOKEN_<name>) in env when the block asks
// (env = true).
func (h *identityHook) setEnv(env map[string]string) {
	if h.spec == nil || !h.spec.Env {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.signed != nil {
		env[h.envVar] = h.signed.JWT
	}
}

// token returns the identity held, "" for none: templates read with it.
func (h *identityHook) token() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.signed == nil {
		return ""
	}
	return h.signed.JWT
}

// stop ends renewals; the task runner calls it when Run returns.
func (h *identityHook) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopped = true
	if h.timer != nil {
		h.timer.Stop()
	}
}

// setupFailed records a "Setup Failure" event for a prestart step of the
// task runner that failed (the identity could not be signed) and returns
// it as a recoverable start error: the restart policy decides whether to
// try again, since the servers may answer later.
func (tr *TaskRunner) setupFailed(err error) error {
	e := newEvent(structs.TaskSetupFailure, tr.clock.Now())
	e.SetupError = err.Error()
	tr.EmitEvent(e)
	return drivers.NewRecoverableError(err, true)
}

// identityRenewed applies an identity block's change_mode to the running
// task after its identity was renewed: a task that reads the token once
// (a proxy, a long-lived client) is restarted or told to read it again.
func (tr *TaskRunner) identityRenewed(w *structs.WorkloadIdentity) {
	switch w.ChangeMode {
	case structs.WorkloadIdentityChangeModeRestart:
		tr.restartInPlace("Workload identity with change_mode restart renewed")
	case structs.WorkloadIdentityChangeModeSignal:
		if err := tr.Signal(w.ChangeSignal); err != nil && !errors.Is(err, ErrTaskNotRunning) {
			tr.logger.Warn("signalling the task after its workload identity was renewed failed", "error", err)
		}
	}
}
