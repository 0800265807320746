package nomad

import (
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"
	"github.com/shoenig/test/must"
	"pgregory.net/rapid"

	"github.com/nomad-edge/nomad/helper/clock/clocktest"
	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// watchRig is a store of deployments with a deployment watcher over it
// whose steps are recorded and carried out on the store, as the raft
// entries of applyDeploymentStep would: a verdict changes the status, a
// promotion promotes every group.
type watchRig struct {
	st    *state.StateStore
	clk   *clocktest.Manual
	index uint64
	// steps are the acted-on steps of the last pass, by deployment ID;
	// acted counts them over every pass.
	steps map[string]string
	acted map[string]int
	// fail, when set, fails the apply of that deployment.
	fail string
}

func newWatchRig(t require, clk *clocktest.Manual) *watchRig {
	st, err := state.NewStateStore(nil)
	must.NoError(t, err)
	return &watchRig{st: st, clk: clk, index: 100, steps: map[string]string{}, acted: map[string]int{}}
}

// require is what the rig's helpers need of a test (testing.T or rapid.T).
type require interface {
	Helper()
	Fatalf(string, ...any)
	Errorf(string, ...any)
}

func (r *watchRig) apply(d *structs.Deployment, _ *structs.Job, step deploymentStep, _ time.Time) error {
	if d.ID == r.fail {
		return errors.New("no quorum")
	}
	if step.Update == nil && !step.Promote && !step.Eval {
		return nil
	}
	r.steps[d.ID] = stepString(step)
	r.acted[d.ID]++
	switch {
	case step.Update != nil:
		r.write(d.ID, func(d *structs.Deployment) { d.Status = step.Update.Status })
	case step.Promote:
		r.write(d.ID, func(d *structs.Deployment) {
			for _, g := range d.TaskGroups {
				g.Promoted = true
			}
		})
	}
	return nil
}

func stepString(s deploymentStep) string {
	out := ""
	if s.Update != nil {
		out += "update:" + s.Update.Status + " "
	}
	if s.Promote {
		out += "promote "
	}
	if s.Eval {
		out += "eval"
	}
	return out
}

// add stores a running deployment of one group.
func (r *watchRig) add(g structs.DeploymentState) string {
	job := mock.Job()
	d := structs.NewDeployment(job, 50, r.clk.Now())
	d.TaskGroups["web"] = &g
	r.index++
	if err := r.st.UpsertDeployment(r.index, d); err != nil {
		panic(err)
	}
	return d.ID
}

// write changes a stored deployment in its own write.
func (r *watchRig) write(id string, change func(*structs.Deployment)) {
	d, err := r.st.DeploymentByID(nil, id)
	if err != nil || d == nil {
		panic(fmt.Sprintf("deployment %s: %v", id, err))
	}
	d = d.Copy()
	change(d)
	r.index++
	if err := r.st.UpsertDeployment(r.index, d); err != nil {
		panic(err)
	}
}

// fullPass is the oracle: the watcher as it was, deciding every running
// deployment on every pass.
func fullPass(st *state.StateStore, now time.Time, lastHealthy map[string]int, apply func(*structs.Deployment, *structs.Job, deploymentStep, time.Time) error) (time.Duration, error) {
	all, err := st.Deployments(nil, state.AllNamespaces, "")
	if err != nil {
		return 0, err
	}
	var next time.Duration
	for _, d := range all {
		if d.Status != structs.DeploymentStatusRunning {
			delete(lastHealthy, d.ID)
			continue
		}
		in, err := deploymentInputFor(st, d, now)
		if err != nil {
			return 0, err
		}
		in.LastHealthy = lastHealthy[d.ID]
		step := decideDeployment(in)
		if err := apply(d, in.Job, step, now); err != nil {
			return 0, err
		}
		lastHealthy[d.ID] = healthyTotal(d)
		if !step.RecheckAt.IsZero() {
			if wait := step.RecheckAt.Sub(now); next == 0 || wait < next {
				next = max(wait, time.Millisecond)
			}
		}
	}
	return next, nil
}

// The watcher decides only the deployments written since its last pass
// and those whose progress deadline came, yet after any sequence of
// writes, health counts, failures and clock moves it takes exactly the
// steps, and asks to be woken at exactly the time, of a watcher that
// decides every running deployment on every pass. It fails if a pass
// misses one changed deployment: that deployment would never finish,
// fail or roll on, and its job would stay mid-rollout forever.
func TestDeploymentWatch_ActsAsAFullPass(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		start := time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)
		clk := clocktest.NewManual(start)
		fast, full := newWatchRig(rt, clk), newWatchRig(rt, clk)
		w := newDeploymentWatch(func() *state.StateStore { return fast.st }, clk, fast.apply)
		fullHealthy := map[string]int{}
		var ids []string
		for step := range rapid.IntRange(1, 60).Draw(rt, "steps") {
			switch op := rapid.IntRange(0, 5).Draw(rt, "op"); {
			case op == 0 || len(ids) == 0:
				g := structs.DeploymentState{DesiredTotal: rapid.IntRange(1, 3).Draw(rt, "total")}
				if rapid.Bool().Draw(rt, "deadline") {
					g.ProgressDeadline = time.Minute
					g.RequireProgressBy = clk.Now().Add(time.Duration(rapid.IntRange(1, 120).Draw(rt, "deadline s")) * time.Second)
				}
				if rapid.Bool().Draw(rt, "canary") {
					g.DesiredCanaries, g.AutoPromote = 1, rapid.Bool().Draw(rt, "auto promote")
				}
				id := fast.add(g)
				// The same deployment, by ID, in the oracle's store.
				d, _ := fast.st.DeploymentByID(nil, id)
				full.index++
				must.NoError(rt, full.st.UpsertDeployment(full.index, d.Copy()))
				ids = append(ids, id)
			case op <= 2:
				id := rapid.SampledFrom(ids).Draw(rt, "healthy")
				for _, r := range []*watchRig{fast, full} {
					r.write(id, func(d *structs.Deployment) { d.TaskGroups["web"].HealthyAllocs++ })
				}
			case op == 3:
				id := rapid.SampledFrom(ids).Draw(rt, "unhealthy")
				for _, r := range []*watchRig{fast, full} {
					r.write(id, func(d *structs.Deployment) { d.TaskGroups["web"].UnhealthyAllocs++ })
				}
			case op == 4:
				clk.Advance(time.Duration(rapid.IntRange(1, 90).Draw(rt, "advance s")) * time.Second)
			default:
				// Writes pile up between passes.
				continue
			}
			clear(fast.steps)
			clear(full.steps)
			gotNext, err := w.pass(memdb.NewWatchSet())
			must.NoError(rt, err)
			wantNext, err := fullPass(full.st, clk.Now(), fullHealthy, full.apply)
			must.NoError(rt, err)
			must.Eq(rt, full.steps, fast.steps, must.Sprintf("step %d: the steps taken", step))
			must.Eq(rt, wantNext, gotNext, must.Sprintf("step %d: when to wake", step))
		}
	})
}

// A pass that fails part-way decides the same deployments again on the
// next pass, so the one whose step failed is acted on once the failure
// clears, and the ones already acted on are not acted on twice; a restore
// (a new store) makes the next pass decide every deployment, as a new
// leader does.
func TestDeploymentWatch_RetriesAfterAFailureAndRestartsAfterARestore(t *testing.T) {
	clk := clocktest.NewManual(time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC))
	r := newWatchRig(t, clk)
	w := newDeploymentWatch(func() *state.StateStore { return r.st }, clk, r.apply)
	var ids []string
	for range 3 {
		ids = append(ids, r.add(structs.DeploymentState{DesiredTotal: 2}))
	}
	_, err := w.pass(memdb.NewWatchSet())
	must.NoError(t, err)
	must.MapEmpty(t, r.steps, must.Sprint("nothing healthy yet: nothing to do"))

	for _, id := range ids {
		r.write(id, func(d *structs.Deployment) { d.TaskGroups["web"].HealthyAllocs = 1 })
	}
	sort.Strings(ids)
	r.fail = ids[1]
	_, err = w.pass(memdb.NewWatchSet())
	must.Error(t, err)
	must.MapNotContainsKey(t, r.acted, ids[1])

	r.fail = ""
	_, err = w.pass(memdb.NewWatchSet())
	must.NoError(t, err)
	must.MapEq(t, map[string]int{ids[0]: 1, ids[1]: 1, ids[2]: 1}, r.acted,
		must.Sprint("each deployment with new health gets one evaluation, the failed one included"))
	clear(r.steps)
	_, err = w.pass(memdb.NewWatchSet())
	must.NoError(t, err)
	must.MapEmpty(t, r.steps, must.Sprint("nothing changed since"))

	// A restore: a new store with the same deployments.
	old := r.st
	r.st, err = state.NewStateStore(nil)
	must.NoError(t, err)
	all, err := old.Deployments(nil, state.AllNamespaces, "")
	must.NoError(t, err)
	for _, d := range all {
		must.NoError(t, r.st.UpsertDeployment(d.ModifyIndex, d.Copy()))
	}
	_, err = w.pass(memdb.NewWatchSet())
	must.NoError(t, err)
	must.MapLen(t, 3, r.steps, must.Sprint("every deployment decided again after a restore"))
}
