package allocrunner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/clienttest"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// fakeSigner signs identities "jwt-1", "jwt-2"... valid for ttl, and
// fails the next fail calls, as servers out of reach do.
type fakeSigner struct {
	mu    sync.Mutex
	ttl   time.Duration
	fail  int
	calls int
}

func (f *fakeSigner) SignIdentity(allocID, task, name string) (*structs.SignedWorkloadIdentity, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.fail > 0 {
		f.fail--
		return nil, errors.New("no servers")
	}
	jwt := fmt.Sprintf("jwt-%d", f.calls)
	if name != "" {
		jwt = name + "-" + jwt
	}
	return &structs.SignedWorkloadIdentity{
		WorkloadIdentityRequest: structs.WorkloadIdentityRequest{AllocID: allocID, TaskName: task, IdentityName: name},
		JWT:                     jwt, Expiration: time.Now().Add(f.ttl),
	}, nil
}

func (f *fakeSigner) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func (f *fakeSigner) failNext(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = n
}

// identityAlloc is a mock allocation whose task asks for its identity
// with w (nil: no identity block).
func identityAlloc(w *structs.WorkloadIdentity) *structs.Allocation {
	a := clienttest.MockAlloc("node-1", map[string]any{"run_for": "10h"})
	a.Job.TaskGroups[0].Tasks[0].Identity = w
	return a
}

func readToken(t *testing.T, ar *AllocRunner) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(ar.tasks[0].dir.SecretsDir, identityTokenFile))
	must.NoError(t, err)
	return string(b)
}

// TestIdentityHook_EnvFileAndRenewal checks the client side of workload
// identity: the task starts with its signed token in NOMAD_TOKEN and
// secrets/nomad_token, the token is renewed when half of its life is
// gone, and a renewal that fails is retried with backoff, so a running
// task never holds an expired identity while the servers answer.
func TestIdentityHook_EnvFileAndRenewal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		signer := &fakeSigner{ttl: time.Hour}
		h.identities = signer
		a := identityAlloc(&structs.WorkloadIdentity{Env: true, File: true})
		ar := h.runner(t, a)
		go ar.Run()
		defer ar.Destroy()
		h.rec.waitStatus(t, a.ID, structs.AllocClientStatusRunning)

		must.Eq(t, "jwt-1", readToken(t, ar))
		must.Eq(t, "jwt-1", ar.tasks[0].taskConfig().Env["NOMAD_TOKEN"])

		time.Sleep(30*time.Minute + time.Second)
		synctest.Wait()
		must.Eq(t, 2, signer.count())
		must.Eq(t, "jwt-2", readToken(t, ar), must.Sprint("renewed at half of its hour"))
		must.Eq(t, "jwt-2", ar.tasks[0].taskConfig().Env["NOMAD_TOKEN"], must.Sprint("the next start gets the new token"))

		signer.failNext(2)
		time.Sleep(30*time.Minute + time.Second)
		synctest.Wait()
		// Renewed at 1h (fails), retried 1s later (fails), then 2s later.
		must.Eq(t, 4, signer.count())
		must.Eq(t, "jwt-2", readToken(t, ar), must.Sprint("a failed renewal keeps the token held"))
		time.Sleep(2 * identityRetryMin)
		synctest.Wait()
		must.Eq(t, 5, signer.count())
		must.Eq(t, "jwt-5", readToken(t, ar))
	})
}

// TestIdentityHook_OnlyWhenAsked checks that a task without an identity
// block (or one asking for neither env nor file) starts without calling
// the servers and gets no NOMAD_TOKEN, so that a node cut off from the
// servers still starts it.
func TestIdentityHook_OnlyWhenAsked(t *testing.T) {
	for name, w := range map[string]*structs.WorkloadIdentity{"none": nil, "neither": {Name: "default"}} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t)
				signer := &fakeSigner{ttl: time.Hour}
				h.identities = signer
				a := identityAlloc(w)
				ar := h.runner(t, a)
				go ar.Run()
				defer ar.Destroy()
				h.rec.waitStatus(t, a.ID, structs.AllocClientStatusRunning)
				must.Eq(t, 0, signer.count())
				_, ok := ar.tasks[0].taskConfig().Env["NOMAD_TOKEN"]
				must.False(t, ok)
			})
		})
	}
}

// TestIdentityHook_SigningFailsStart checks that a task whose identity
// cannot be signed does not start without it: the start fails with a
// Setup Failure event naming why, and the restart policy tries again,
// starting the task once the servers sign.
func TestIdentityHook_SigningFailsStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		signer := &fakeSigner{ttl: time.Hour, fail: 1}
		h.identities = signer
		a := identityAlloc(&structs.WorkloadIdentity{File: true})
		ar := h.runner(t, a)
		go ar.Run()
		defer ar.Destroy()
		got := h.rec.waitStatus(t, a.ID, structs.AllocClientStatusRunning)
		must.Eq(t, "jwt-2", readToken(t, ar))
		var setup *structs.TaskEvent
		for _, e := range got.TaskStates[a.Job.TaskGroups[0].Tasks[0].Name].Events {
			if e.Type == structs.TaskSetupFailure {
				setup = e
			}
		}
		must.NotNil(t, setup)
		must.StrContains(t, setup.SetupError, "signing the task's workload identity: no servers")
	})
}

// restartCutOff runs the harness's one persisted allocation in a new
// alloc runner, as a client restarted while the servers cannot be reached
// does, and returns it with its signer, which fails every call. The
// runner is destroyed at the end of the test.
func restartCutOff(t *testing.T, h *harness) (*AllocRunner, *fakeSigner) {
	t.Helper()
	recs, _, err := h.db.GetAllocations()
	must.NoError(t, err)
	cutOff := &fakeSigner{ttl: time.Hour, fail: 1 << 30}
	ar, err := NewAllocRunner(Config{
		Alloc: recs[0].Alloc, AllocDirRoot: h.root, StateDB: h.db, Drivers: h.drivers, StateUpdater: h.rec,
		Identities: cutOff,
	})
	must.NoError(t, err)
	ar.Restore(recs[0].Tasks)
	go ar.Run()
	t.Cleanup(ar.Destroy)
	synctest.Wait()
	return ar, cutOff
}

// TestIdentityHook_RestoredWhileCutOff checks that a client restarted
// while the servers cannot be reached hands the task the identity it
// persisted, without asking the servers, until it expires.
func TestIdentityHook_RestoredWhileCutOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.identities = &fakeSigner{ttl: time.Hour}
		a := identityAlloc(&structs.WorkloadIdentity{Env: true})
		ar := h.runner(t, a)
		go ar.Run()
		h.rec.waitStatus(t, a.ID, structs.AllocClientStatusRunning)
		ar.Shutdown()

		ar2, cutOff := restartCutOff(t, h)
		must.Eq(t, "jwt-1", ar2.tasks[0].taskConfig().Env["NOMAD_TOKEN"])
		must.Eq(t, 0, cutOff.count(), must.Sprint("nothing asked before the renewal is due"))
	})
}

// TestIdentityHook_ChangeModes checks an identity block's change_mode at
// each renewal: restart restarts the task in place (its next start has
// the new NOMAD_TOKEN), signal sends change_signal, noop only rewrites the
// file; the first signing, before the start, triggers nothing. A task
// that reads its token once would otherwise go on with an expired one.
func TestIdentityHook_ChangeModes(t *testing.T) {
	for _, mode := range []string{structs.WorkloadIdentityChangeModeRestart, structs.WorkloadIdentityChangeModeSignal, structs.WorkloadIdentityChangeModeNoop} {
		t.Run(mode, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h, d := templateHarness(t, nil)
				w := &structs.WorkloadIdentity{Env: true, File: true, ChangeMode: mode}
				if mode == structs.WorkloadIdentityChangeModeSignal {
					w.ChangeSignal = "SIGHUP"
				}
				a := identityAlloc(w)
				ar := h.runner(t, a)
				go ar.Run()
				defer ar.Destroy()
				h.rec.waitStatus(t, a.ID, structs.AllocClientStatusRunning)
				must.Eq(t, 0, restarts(ar))
				must.SliceEmpty(t, d.got())

				time.Sleep(30*time.Minute + time.Second) // half of the fake signer's hour
				synctest.Wait()
				must.Eq(t, "jwt-2", readToken(t, ar))
				switch mode {
				case structs.WorkloadIdentityChangeModeRestart:
					must.Eq(t, 1, restarts(ar))
					must.Eq(t, "jwt-2", ar.tasks[0].taskConfig().Env["NOMAD_TOKEN"])
					must.Eq(t, "Workload identity with change_mode restart renewed", lastEvent(ar, structs.TaskRestartSignal).RestartReason)
					must.SliceEmpty(t, d.got())
				case structs.WorkloadIdentityChangeModeSignal:
					must.Eq(t, 0, restarts(ar))
					must.Eq(t, []string{"SIGHUP"}, d.got())
				default:
					must.Eq(t, 0, restarts(ar))
					must.SliceEmpty(t, d.got())
				}
			})
		})
	}
}

// TestIdentityHook_NamedIdentities checks a task's named identities: each
// signed by its name and handed over as its block asks, in
// NOMAD_TOKEN_<name> and secrets/nomad_<name>.jwt, beside the default one
// in NOMAD_TOKEN; a block asking for neither is not signed. Each is kept
// in the state DB, so a client restarted while cut off hands the task the
// ones it held.
func TestIdentityHook_NamedIdentities(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.identities = &fakeSigner{ttl: time.Hour}
		a := identityAlloc(&structs.WorkloadIdentity{Env: true})
		a.Job.TaskGroups[0].Tasks[0].Identities = []*structs.WorkloadIdentity{
			{Name: "vault", Audience: []string{"vault.io"}, File: true},
			{Name: "mesh", Audience: []string{"mesh.example"}, Env: true},
			{Name: "unused", Audience: []string{"x"}},
		}
		ar := h.runner(t, a)
		go ar.Run()
		h.rec.waitStatus(t, a.ID, structs.AllocClientStatusRunning)

		env := ar.tasks[0].taskConfig().Env
		must.StrHasPrefix(t, "jwt-", env["NOMAD_TOKEN"])
		must.StrHasPrefix(t, "mesh-jwt-", env["NOMAD_TOKEN_mesh"])
		_, ok := env["NOMAD_TOKEN_vault"]
		must.False(t, ok, must.Sprint("vault asks for a file only"))
		b, err := os.ReadFile(filepath.Join(ar.tasks[0].dir.SecretsDir, "nomad_vault.jwt"))
		must.NoError(t, err)
		must.StrHasPrefix(t, "vault-jwt-", string(b))
		_, err = os.Stat(filepath.Join(ar.tasks[0].dir.SecretsDir, identityTokenFile))
		must.True(t, os.IsNotExist(err), must.Sprint("the default identity asks for env only"))
		must.Eq(t, 3, h.identities.(*fakeSigner).count(), must.Sprint("default, vault and mesh; not unused"))
		mesh := env["NOMAD_TOKEN_mesh"]
		ar.Shutdown()

		ar2, cutOff := restartCutOff(t, h)
		must.Eq(t, mesh, ar2.tasks[0].taskConfig().Env["NOMAD_TOKEN_mesh"])
		must.Eq(t, 0, cutOff.count(), must.Sprint("nothing asked before the renewals are due"))
	})
}
