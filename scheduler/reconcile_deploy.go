package scheduler

import (
	"slices"
	"time"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// deployState is what the reconciler knows about the job's deployment
// while it reconciles the groups.
type deployState struct {
	// old is the job's latest deployment when it belongs to an older job
	// version (or nil); an active one is cancelled.
	old *structs.Deployment
	// cur is the deployment of the current job version: the stored one or
	// a new one that exists only if some group has work for it.
	cur     *structs.Deployment
	created bool
}

// newDeployState decides which deployment this evaluation works under.
func (r *reconciler) newDeployState() *deployState {
	ds := &deployState{}
	d, job := r.in.Deployment, r.in.Job
	if d != nil && job != nil && d.JobVersion == job.Version && d.JobCreateIndex == job.CreateIndex && !job.Stopped() {
		ds.cur = d.Copy()
	} else {
		ds.old = d
	}
	if ds.cur == nil && job != nil && !job.Stopped() && job.Type == structs.JobTypeService && hasRollingGroup(job) {
		ds.cur = structs.NewDeployment(job, r.in.EvalPriority, r.in.Now)
		ds.created = true
	}
	return ds
}

func hasRollingGroup(job *structs.Job) bool {
	for _, tg := range job.TaskGroups {
		if tg.Update.Rolling() {
			return true
		}
	}
	return false
}

// running reports whether the current deployment may place and update.
func (ds *deployState) running() bool {
	return ds.cur != nil && ds.cur.Status == structs.DeploymentStatusRunning
}

// groupState returns the current deployment's state of tg, adding it to a
// new deployment.
func (ds *deployState) groupState(tg *structs.TaskGroup, fresh func() *structs.DeploymentState) *structs.DeploymentState {
	if s, ok := ds.cur.TaskGroups[tg.Name]; ok {
		return s
	}
	s := fresh()
	ds.cur.TaskGroups[tg.Name] = s
	return s
}

// finish sets the results' deployment to create with the plan (none when
// no group had work for a new one), the one placements join, and the
// cancellation of an older running deployment.
func (ds *deployState) finish(res *ReconcileResults, job *structs.Job) {
	if ds.old.Active() {
		desc := structs.DeploymentStatusDescriptionNewerJob
		if job.Stopped() {
			desc = structs.DeploymentStatusDescriptionStoppedJob
		}
		res.DeploymentUpdates = append(res.DeploymentUpdates, &structs.DeploymentStatusUpdate{
			DeploymentID: ds.old.ID, Status: structs.DeploymentStatusCancelled, StatusDescription: desc,
		})
	}
	if ds.cur == nil {
		return
	}
	used := false
	for _, g := range res.Groups {
		if g.DeploymentID != "" && (len(g.Place) > 0 || len(g.DestructiveUpdate) > 0 || len(g.InplaceUpdate) > 0) {
			used = true
		}
	}
	if ds.created && !used {
		for _, g := range res.Groups {
			g.DeploymentID = ""
		}
		return
	}
	if ds.created {
		if ds.cur.RequiresPromotion() {
			ds.cur.StatusDescription = structs.DeploymentStatusDescriptionRunningNeedsPromotion
			if ds.cur.HasAutoPromote() {
				ds.cur.StatusDescription = structs.DeploymentStatusDescriptionRunningAutoPromotion
			}
		}
		res.Deployment = ds.cur
	}
	res.ActiveDeployment = ds.cur
}

// groupDeployment is one group's part in the current deployment.
type groupDeployment struct {
	ds    *deployState
	state *structs.DeploymentState
	// canaries are live canaries of the current deployment (promoted or
	// not); unpromoted ones do not count toward the group's count.
	canaries allocSet
}

// deploymentFor returns the group's part in the current deployment, or
// nil when the group does not deploy (no update block, or no deployment).
func (r *reconciler) deploymentFor(ds *deployState, tg *structs.TaskGroup) *groupDeployment {
	if ds == nil || ds.cur == nil || !tg.Update.Rolling() {
		return nil
	}
	u := tg.Update
	st := ds.groupState(tg, func() *structs.DeploymentState {
		return &structs.DeploymentState{
			AutoRevert: u.AutoRevert, AutoPromote: u.AutoPromote, ProgressDeadline: u.ProgressDeadline,
			DesiredTotal: tg.Count, RequireProgressBy: r.progressBy(u),
		}
	})
	return &groupDeployment{ds: ds, state: st, canaries: allocSet{}}
}

func (r *reconciler) progressBy(u *structs.UpdateStrategy) (t time.Time) {
	if u.ProgressDeadline > 0 {
		return r.in.Now.Add(u.ProgressDeadline)
	}
	return t
}

// stopOldCanaries stops the unpromoted canaries of a deployment that is no
// longer current: the version they tried is not the one to run.
func (r *reconciler) stopOldCanaries(g *groupState, ds *deployState) {
	if ds == nil || ds.old == nil {
		return
	}
	old := ds.old
	if s, ok := old.TaskGroups[g.tg.Name]; ok && s.Promoted {
		return
	}
	for _, a := range g.keep.sorted() {
		if a.DeploymentID == old.ID && a.DeploymentStatus.IsCanary() {
			delete(g.keep, a.ID)
			r.stop(g, a, structs.AllocNotNeeded, "")
		}
	}
}

// setAsideCanaries takes the current deployment's canaries out of the
// counted set while they are unpromoted, and once promoted stops the older
// allocation each canary stands in for (same name). A canary is found
// among all live allocations, so one marked unknown while its node is
// away still counts as placed: a second one is never started for it.
func (r *reconciler) setAsideCanaries(g *groupState, gd *groupDeployment, all allocSet) {
	if gd == nil {
		return
	}
	for _, a := range all.sorted() {
		// A promoted canary's flag is cleared; PlacedCanaries still has it.
		canary := a.DeploymentStatus.IsCanary() || slices.Contains(gd.state.PlacedCanaries, a.ID)
		if a.DeploymentID == gd.ds.cur.ID && canary && isLive(a) {
			gd.canaries[a.ID] = a
		}
	}
	if len(gd.canaries) == 0 {
		return
	}
	if !gd.state.Promoted {
		for id, a := range gd.canaries {
			if _, ok := g.keep[id]; ok {
				delete(g.keep, id)
				g.ignored[id] = a
			}
		}
		return
	}
	names := map[string]bool{}
	for _, c := range gd.canaries {
		names[c.Name] = true
	}
	for _, a := range g.keep.sorted() {
		if names[a.Name] && !r.sameVersion(a) {
			delete(g.keep, a.ID)
			r.stop(g, a, structs.AllocNotNeeded, "")
		}
	}
}

// limitUpdates applies the update block to the group's destructive
// updates: canaries first, then at most max_parallel allocations of the
// deployment in flight (placed, not yet healthy). What is held back stays
// running its older version and is updated by a later evaluation.
func (r *reconciler) limitUpdates(g *groupState, gd *groupDeployment) {
	if gd == nil || len(g.destructive) == 0 {
		return
	}
	u := g.tg.Update
	limit := 0
	switch {
	case !gd.ds.running():
	case u.Canary > 0 && !gd.state.Promoted:
		r.placeCanaries(g, gd)
	default:
		limit = max(u.MaxParallel-r.inFlight(g, gd), 0)
	}
	if limit >= len(g.destructive) {
		return
	}
	for _, p := range g.destructive[limit:] {
		g.keep[p.previousAlloc.ID] = p.previousAlloc
	}
	g.destructive = g.destructive[:limit]
}

// inFlight counts the deployment's allocations without a health verdict.
// An unknown one counts until its window expires and it is replaced: the
// progress deadline, not the disconnect, decides when the deployment has
// waited long enough.
func (r *reconciler) inFlight(g *groupState, gd *groupDeployment) int {
	// A lost member of the deployment is replaced in this same plan; its
	// replacement will be in flight too.
	n := 0
	for _, a := range g.gone {
		if a.DeploymentID == gd.ds.cur.ID {
			n++
		}
	}
	for _, a := range g.keep {
		if a.DeploymentID == gd.ds.cur.ID && !a.DeploymentStatus.HasHealth() && !a.TerminalStatus() {
			n++
		}
	}
	return n
}

// placeCanaries asks for the canaries the deployment still lacks, under the
// names of the allocations they would replace.
func (r *reconciler) placeCanaries(g *groupState, gd *groupDeployment) {
	want := g.tg.Update.Canary
	if gd.state.DesiredCanaries == 0 {
		gd.state.DesiredCanaries = want
	}
	need := want - len(gd.canaries)
	taken := map[string]bool{}
	for _, c := range gd.canaries {
		taken[c.Name] = true
	}
	for _, p := range g.destructive {
		if need <= 0 {
			break
		}
		if taken[p.name] {
			continue
		}
		g.canaryPlace = append(g.canaryPlace, placementRequest{name: p.name, taskGroup: g.tg, canary: true})
		need--
	}
}

// joinDeployment moves the group's in-place updates into the current
// deployment: their health is judged again under the new version.
func (r *reconciler) joinDeployment(g *groupState, gd *groupDeployment) {
	if gd == nil || !gd.ds.running() {
		return
	}
	for _, a := range g.inplace {
		if a.DeploymentID != gd.ds.cur.ID {
			a.DeploymentID = gd.ds.cur.ID
			a.DeploymentStatus = nil
		}
	}
}

// heldCanary reports whether a is an unpromoted canary of the current
// deployment: it is not counted, and while its node is away it is not
// replaced either (the deployment waits for it, bounded by its progress
// deadline), so a disconnect never multiplies canaries.
func (g *groupState) heldCanary(a *structs.Allocation) bool {
	if g.gd == nil || g.gd.state.Promoted {
		return false
	}
	_, ok := g.gd.canaries[a.ID]
	return ok
}

// holdCanaries takes unpromoted canaries out of the counted set again
// after the disconnect rules, which may have put one back (an unknown
// canary is revived like any standby allocation). Precondition: every
// disconnect phase (through deferFailed) ran.
func (r *reconciler) holdCanaries(g *groupState) {
	for id, a := range g.keep {
		if !g.heldCanary(a) {
			continue
		}
		delete(g.keep, id)
		if _, changed := g.changed[id]; !changed {
			g.ignored[id] = a
		}
	}
}
