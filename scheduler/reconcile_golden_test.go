package scheduler

import (
	"bufio"
	"flag"
	"fmt"
	"maps"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the golden results of testdata/reconcile/*.txt")

// TestReconcileGolden runs the scenarios in testdata/reconcile: each file
// describes a job, its nodes and allocations, and holds the reconciler's
// answer under every "reconcile" command. A change to a rule shows up as a
// diff of these files, which a reviewer reads as a story
// (go test ./scheduler -run Golden -rewrite regenerates them).
//
// A file is a list of commands, one a line ("name key=value ..."); a
// "reconcile" is followed by "----" and its expected output, which ends at
// a blank line. Lines starting with # are comments. Commands:
//
//	job count=N [type=service|batch] [version=N] [lost_after=D] [replace=BOOL] [reconcile=STRATEGY]
//	    [stop_after=D] [max_client_disconnect=D] [stop_after_client_disconnect=D]
//	    [max_parallel=N] [canary=N] [auto_promote] [stopped] [meta=V] [tasks=NAME:KILL,...]
//	    [attempts=N interval=D delay=D [delay_function=constant|exponential|fibonacci]] [unlimited]
//	node ID [status=ready|disconnected|down|gone] [drain]
//	alloc ID idx=N [node=ID] [client=STATUS] [desired=run|stop] [desc=lost|rescheduled] [prev=ID]
//	      [version=N] [unknown_since=D] [failed_at=D] [started=D] [score=F] [created=N] [migrate]
//	      [old_tasks] [deployment=ID] [healthy=BOOL] [canary] [attempts=D,D...] [placed=D]
//	      [modified=D] [followup=EVALID] [tasks=NAME:STATE,...] [reschedule]
//	deployment ID [version=N] [status=STATUS] [promoted] [canaries=N]
//	reconcile [now=D] [eval=ID] [priority=N]
//	purge        (the job is purged: the reconciler gets no job)
//	reset        (an empty world: the next case of the file starts afresh)
//
// old_tasks gives the allocation a job whose task differs from the current
// one, so moving it to the current version is a destructive update. A job's
// attempts= sets its reschedule policy; an allocation's attempts= its
// reschedule tracker, one attempt at each time, and placed= its creation
// time. The legacy max_client_disconnect and stop_after_client_disconnect
// set the group's old fields instead of its disconnect block. A job's
// tasks= gives its tasks (the first one the mock's "web") their kill
// timeouts and meta= its job and group meta; an allocation's tasks= the
// states of its tasks, modified= its ModifyTime and followup= its
// FollowupEvalID, and reschedule its desired transition to be rescheduled
// (as migrate to migrate). A reconcile runs as evaluation eval (eval-now) of
// priority.
//
// Besides the output, every reconcile checks what holds for any input
// (checkResults): the input is left unchanged, the answer does not depend
// on the order of the allocations, and the decisions carry what the plan
// needs (follow-ups name the evaluation, marked allocations are unknown
// now, in-place ones run the current job).
//
// Durations are relative to the scenario's now and may be negative.
func TestReconcileGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "reconcile", "*.txt"))
	must.NoError(t, err)
	must.SliceNotEmpty(t, files)
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			runScenarioFile(t, file)
		})
	}
}

// directive is one command of a scenario file and its expected output.
type directive struct {
	line     int
	cmd      string
	args     map[string]string
	pos      []string // positional arguments, in order
	expected string
}

func parseScenario(path string) ([]*directive, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []*directive
	var cur *directive
	inOutput := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case inOutput && line == "":
			inOutput, cur = false, nil
		case inOutput:
			cur.expected += line + "\n"
		case line == "----":
			if cur == nil {
				return nil, fmt.Errorf("%s:%d: ---- without a command", path, n)
			}
			inOutput = true
		case line == "" || strings.HasPrefix(line, "#"):
			cur = nil
		default:
			fields := strings.Fields(line)
			cur = &directive{line: n, cmd: fields[0], args: map[string]string{}}
			for _, f := range fields[1:] {
				if k, v, ok := strings.Cut(f, "="); ok {
					cur.args[k] = v
				} else {
					cur.pos = append(cur.pos, f)
					cur.args[f] = "true"
				}
			}
			out = append(out, cur)
		}
	}
	return out, sc.Err()
}

// writeScenario writes the directives back with their new output.
func writeScenario(path string, ds []*directive, outputs map[*directive]string) error {
	src, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	lines := strings.Split(string(src), "\n")
	var b strings.Builder
	byLine := map[int]*directive{}
	for _, d := range ds {
		byLine[d.line] = d
	}
	for i := 0; i < len(lines); i++ {
		b.WriteString(lines[i])
		if i < len(lines)-1 {
			b.WriteString("\n")
		}
		d, ok := byLine[i+1]
		if !ok || d.cmd != "reconcile" {
			continue
		}
		// Skip the old output, if any, and write the new one.
		j := i + 1
		if j < len(lines) && lines[j] == "----" {
			for j++; j < len(lines) && lines[j] != ""; j++ {
			}
		}
		b.WriteString("----\n" + outputs[d])
		if j >= len(lines) || lines[j] != "" {
			b.WriteString("\n")
		}
		i = j - 1
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// scenario is the world a file builds up.
type scenario struct {
	job        *structs.Job
	deployment *structs.Deployment
	nodes      map[string]*structs.Node // nil value: the node is gone
	allocs     map[string]*structs.Allocation
	now        time.Time
}

func runScenarioFile(t *testing.T, path string) {
	ds, err := parseScenario(path)
	must.NoError(t, err)
	s := &scenario{nodes: map[string]*structs.Node{}, allocs: map[string]*structs.Allocation{}, now: testNow}
	outputs := map[*directive]string{}
	for _, d := range ds {
		where := fmt.Sprintf("%s:%d", path, d.line)
		var err error
		switch d.cmd {
		case "job":
			err = s.setJob(d)
		case "node":
			err = s.setNode(d)
		case "alloc":
			err = s.setAlloc(d)
		case "deployment":
			err = s.setDeployment(d)
		case "purge":
			s.job = nil
		case "reset":
			*s = scenario{nodes: map[string]*structs.Node{}, allocs: map[string]*structs.Allocation{}, now: testNow}
		case "reconcile":
			var out string
			out, err = s.reconcile(t, d)
			outputs[d] = out
			if err == nil && !*rewrite && out != d.expected {
				t.Errorf("%s: reconcile\n--- want\n%s--- got\n%s", where, d.expected, out)
			}
		default:
			err = fmt.Errorf("unknown command %q", d.cmd)
		}
		if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
	}
	if *rewrite {
		must.NoError(t, writeScenario(path, ds, outputs))
	}
}

func (d *directive) duration(key string) (time.Duration, bool, error) {
	v, ok := d.args[key]
	if !ok {
		return 0, false, nil
	}
	dur, err := time.ParseDuration(v)
	if err != nil {
		return 0, false, fmt.Errorf("%s: %w", key, err)
	}
	return dur, true, nil
}

func (d *directive) int(key string, def int) (int, error) {
	v, ok := d.args[key]
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", key, err)
	}
	return n, nil
}

func (s *scenario) setJob(d *directive) error {
	job := mock.Job()
	if d.args["type"] == structs.JobTypeBatch {
		job = mock.BatchJob()
	}
	job.ID = "example"
	tg := job.TaskGroups[0]
	var err error
	if tg.Count, err = d.int("count", 1); err != nil {
		return err
	}
	version, err := d.int("version", 0)
	if err != nil {
		return err
	}
	job.Version = uint64(version)
	job.Stop = d.args["stopped"] == "true"
	lost, hasLost, err := d.duration("lost_after")
	if err != nil {
		return err
	}
	stop, hasStop, err := d.duration("stop_after")
	if err != nil {
		return err
	}
	if hasLost || hasStop || d.args["replace"] != "" || d.args["reconcile"] != "" {
		tg.Disconnect = &structs.DisconnectStrategy{LostAfter: lost, Reconcile: d.args["reconcile"]}
		if hasStop {
			tg.Disconnect.StopOnClientAfter = &stop
		}
		if v := d.args["replace"]; v != "" {
			replace, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("replace: %w", err)
			}
			tg.Disconnect.Replace = &replace
		}
	}
	if v, ok, err := d.duration("max_client_disconnect"); err != nil {
		return err
	} else if ok {
		tg.MaxClientDisconnect = &v
	}
	if v, ok, err := d.duration("stop_after_client_disconnect"); err != nil {
		return err
	} else if ok {
		tg.StopAfterClientDisconnect = &v
	}
	if v := d.args["meta"]; v != "" {
		job.Meta["owner"] = v
		tg.Meta = map[string]string{"k": v}
	}
	if v := d.args["tasks"]; v != "" {
		web := tg.Tasks[0]
		tg.Tasks = nil
		for _, spec := range strings.Split(v, ",") {
			name, kill, _ := strings.Cut(spec, ":")
			t := web.Copy()
			t.Name = name
			if t.KillTimeout, err = time.ParseDuration(kill); err != nil {
				return fmt.Errorf("tasks: %w", err)
			}
			tg.Tasks = append(tg.Tasks, t)
		}
	}
	if d.args["attempts"] != "" || d.args["unlimited"] == "true" {
		// A reschedule policy of attempts within interval, delay apart.
		tg.ReschedulePolicy = &structs.ReschedulePolicy{DelayFunction: cmpOr(d.args["delay_function"], structs.DelayFunctionConstant),
			Unlimited: d.args["unlimited"] == "true"}
		if tg.ReschedulePolicy.Attempts, err = d.int("attempts", 0); err != nil {
			return err
		}
		if tg.ReschedulePolicy.Interval, _, err = d.duration("interval"); err != nil {
			return err
		}
		if tg.ReschedulePolicy.Delay, _, err = d.duration("delay"); err != nil {
			return err
		}
	}
	if mp, err := d.int("max_parallel", 0); err != nil {
		return err
	} else if mp > 0 {
		tg.Update = &structs.UpdateStrategy{MaxParallel: mp, HealthCheck: structs.UpdateHealthCheckTaskStates,
			MinHealthyTime: 10 * time.Second, HealthyDeadline: 5 * time.Minute, ProgressDeadline: 10 * time.Minute,
			AutoPromote: d.args["auto_promote"] == "true"}
		if tg.Update.Canary, err = d.int("canary", 0); err != nil {
			return err
		}
	}
	s.job = job
	return nil
}

func (s *scenario) setDeployment(d *directive) error {
	if s.job == nil || len(d.pos) == 0 {
		return fmt.Errorf("deployment needs a job and an ID")
	}
	version, err := d.int("version", int(s.job.Version))
	if err != nil {
		return err
	}
	canaries, err := d.int("canaries", 0)
	if err != nil {
		return err
	}
	dep := structs.NewDeployment(s.job, 50, s.now)
	dep.ID, dep.JobVersion = d.pos[0], uint64(version)
	dep.Status = cmpOr(d.args["status"], structs.DeploymentStatusRunning)
	tg := s.job.TaskGroups[0]
	dep.TaskGroups[tg.Name] = &structs.DeploymentState{
		DesiredTotal: tg.Count, DesiredCanaries: canaries, Promoted: d.args["promoted"] == "true",
	}
	s.deployment = dep
	return nil
}

func (s *scenario) setNode(d *directive) error {
	if len(d.pos) == 0 {
		return fmt.Errorf("node needs an ID")
	}
	id := d.pos[0]
	status := d.args["status"]
	if status == "gone" {
		s.nodes[id] = nil
		return nil
	}
	n := mock.Node()
	n.ID, n.Name = id, id
	if status != "" {
		n.Status = status
	}
	n.Drain = d.args["drain"] == "true"
	s.nodes[id] = n
	return nil
}

func (s *scenario) setAlloc(d *directive) error {
	if s.job == nil {
		return fmt.Errorf("alloc before job")
	}
	if len(d.pos) == 0 {
		return fmt.Errorf("alloc needs an ID")
	}
	id := d.pos[0]
	idx, err := d.int("idx", 0)
	if err != nil {
		return err
	}
	created, err := d.int("created", 100+len(s.allocs))
	if err != nil {
		return err
	}
	job := s.job
	if v, err := d.int("version", int(job.Version)); err != nil {
		return err
	} else if uint64(v) != job.Version {
		job = job.Copy()
		job.Version = uint64(v)
	}
	if d.args["old_tasks"] == "true" {
		job = job.Copy()
		job.TaskGroups[0].Tasks[0].Env = map[string]string{"VERSION": "old"}
	}
	tg := job.TaskGroups[0]
	a := &structs.Allocation{
		ID: id, Namespace: job.Namespace, EvalID: "eval-" + id,
		Name:   structs.AllocName(job.ID, tg.Name, uint(idx)),
		NodeID: cmpOr(d.args["node"], "n-"+id), JobID: job.ID, Job: job, TaskGroup: tg.Name,
		AllocatedResources: structs.NewAllocatedResources(tg),
		Metrics:            &structs.AllocMetric{},
		DesiredStatus:      cmpOr(d.args["desired"], structs.AllocDesiredStatusRun),
		ClientStatus:       cmpOr(d.args["client"], structs.AllocClientStatusRunning),
		PreviousAllocation: d.args["prev"],
		CreateIndex:        uint64(created),
	}
	if since, ok, err := d.duration("unknown_since"); err != nil {
		return err
	} else if ok {
		a.AllocStates = []*structs.AllocState{{Field: structs.AllocStateFieldClientStatus, Value: structs.AllocClientStatusUnknown, Time: s.now.Add(since)}}
	}
	if at, ok, err := d.duration("failed_at"); err != nil {
		return err
	} else if ok {
		failedAt(a, s.now.Add(at))
	}
	if at, ok, err := d.duration("modified"); err != nil {
		return err
	} else if ok {
		a.ModifyTime = s.now.Add(at).UnixNano()
	}
	a.FollowupEvalID = d.args["followup"]
	switch d.args["desc"] {
	case "":
	case "lost":
		a.DesiredDescription = structs.AllocLost
	case "rescheduled":
		a.DesiredDescription = structs.AllocRescheduled
	default:
		return fmt.Errorf("desc: unknown %q", d.args["desc"])
	}
	if at, ok, err := d.duration("placed"); err != nil {
		return err
	} else if ok {
		a.CreateTime = s.now.Add(at).UnixNano()
	}
	if v := d.args["attempts"]; v != "" {
		// The reschedule tracker: one attempt at each time, the last one
		// the attempt that placed this allocation for its predecessor.
		a.RescheduleTracker = &structs.RescheduleTracker{}
		for _, at := range strings.Split(v, ",") {
			dur, err := time.ParseDuration(at)
			if err != nil {
				return fmt.Errorf("attempts: %w", err)
			}
			a.RescheduleTracker.Events = append(a.RescheduleTracker.Events, &structs.RescheduleEvent{
				RescheduleTime: s.now.Add(dur).UnixNano(), PrevAllocID: a.PreviousAllocation,
			})
		}
	}
	if at, ok, err := d.duration("started"); err != nil {
		return err
	} else if ok {
		a.TaskStates = map[string]*structs.TaskState{"web": {State: structs.TaskStateRunning, StartedAt: s.now.Add(at)}}
	}
	if v := d.args["tasks"]; v != "" {
		if a.TaskStates == nil {
			a.TaskStates = map[string]*structs.TaskState{}
		}
		for _, spec := range strings.Split(v, ",") {
			name, state, _ := strings.Cut(spec, ":")
			a.TaskStates[name] = &structs.TaskState{State: state}
		}
	}
	if v := d.args["score"]; v != "" {
		score, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("score: %w", err)
		}
		a.Metrics.ScoreMetaData = []*structs.NodeScoreMeta{{NodeID: a.NodeID, NormScore: score}}
	}
	if d.args["migrate"] == "true" {
		yes := true
		a.DesiredTransition.Migrate = &yes
	}
	if d.args["reschedule"] == "true" {
		yes := true
		a.DesiredTransition.Reschedule = &yes
	}
	a.DeploymentID = d.args["deployment"]
	if v := d.args["healthy"]; v != "" || d.args["canary"] == "true" {
		a.DeploymentStatus = &structs.AllocDeploymentStatus{Canary: d.args["canary"] == "true"}
		if v != "" {
			healthy, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("healthy: %w", err)
			}
			a.DeploymentStatus.Healthy = &healthy
		}
	}
	if prev := s.allocs[a.PreviousAllocation]; prev != nil {
		prev.NextAllocation = a.ID
	}
	s.allocs[id] = a
	return nil
}

func cmpOr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// tainted returns the nodes the reconciler is told about, as
// taintedNodes reads them from the state store.
func (s *scenario) tainted() map[string]*structs.Node {
	out := map[string]*structs.Node{}
	for id, n := range s.nodes {
		if n == nil || n.Status != structs.NodeStatusReady || n.Drain || n.SchedulingEligibility == structs.NodeSchedulingIneligible {
			out[id] = n
		}
	}
	return out
}

func (s *scenario) reconcile(t *testing.T, d *directive) (string, error) {
	now := s.now
	if at, ok, err := d.duration("now"); err != nil {
		return "", err
	} else if ok {
		now = s.now.Add(at)
	}
	priority, err := d.int("priority", 0)
	if err != nil {
		return "", err
	}
	allocs := slices.Collect(maps.Values(s.allocs))
	sort.Slice(allocs, func(i, j int) bool { return allocs[i].ID < allocs[j].ID })
	input := func(allocs []*structs.Allocation) ReconcilerInput {
		// The reconciler must not change its input: copies go in, and
		// checkResults compares them with the originals.
		in := make([]*structs.Allocation, len(allocs))
		for i, a := range allocs {
			in[i] = a.Copy()
		}
		return ReconcilerInput{Job: s.job, Allocs: in, TaintedNodes: s.tainted(), EvalID: cmpOr(d.args["eval"], "eval-now"),
			EvalPriority: priority, Now: now, Deployment: s.deployment.Copy()}
	}
	in := input(allocs)
	res := Reconcile(in)
	checkResults(t, in, allocs, res)
	checkPhases(t, input(allocs))
	out := describeResults(res, now)
	// The same world listed in another order gives the same answer:
	// reversed, and shuffled a few times with a fixed seed.
	other := slices.Clone(allocs)
	slices.Reverse(other)
	rng := rand.New(rand.NewSource(int64(d.line)))
	for i := range 8 {
		if i > 0 {
			rng.Shuffle(len(other), func(i, j int) { other[i], other[j] = other[j], other[i] })
		}
		if got := describeResults(Reconcile(input(other)), now); got != out {
			t.Errorf("reconcile at now%+v depends on the order of the allocations:\n--- sorted\n%s--- reordered\n%s", now.Sub(s.now), out, got)
			break
		}
	}
	return out, nil
}

// checkResults checks what any answer of the reconciler promises, beyond
// the decisions the golden output shows: each allocation has one decision
// (checkExclusive), the input allocations are unchanged, every follow-up
// evaluation goes on from this one at its priority, every allocation
// marked disconnected is unknown as of now and still desired running,
// every one updated in place runs the current job as of this evaluation,
// every reconnected one no longer waits to reconnect, and a placement
// keeps only an unknown previous allocation running.
func checkResults(t *testing.T, in ReconcilerInput, orig []*structs.Allocation, res ReconcileResults) {
	t.Helper()
	for i, a := range in.Allocs {
		if !reflect.DeepEqual(a, orig[i].Copy()) {
			t.Errorf("the reconciler changed its input allocation %s", a.ID)
		}
	}
	for _, g := range res.Groups {
		checkExclusive(t, g)
		for _, e := range g.FollowupEvals {
			if e.PreviousEval != in.EvalID || e.Priority != in.EvalPriority || e.JobID != in.Job.ID || e.Status != structs.EvalStatusPending {
				t.Errorf("group %s: follow-up %+v does not go on from evaluation %s at priority %d", g.Name, e, in.EvalID, in.EvalPriority)
			}
		}
		for id, u := range g.Disconnect {
			last := u.AllocStates[len(u.AllocStates)-1]
			if u.ClientStatus != structs.AllocClientStatusUnknown || u.ClientDescription != structs.AllocUnknown ||
				u.DesiredStatus != structs.AllocDesiredStatusRun || last.Value != structs.AllocClientStatusUnknown || !last.Time.Equal(in.Now) {
				t.Errorf("group %s: %s marked disconnected is not unknown since now", g.Name, id)
			}
		}
		for id, u := range g.InplaceUpdate {
			if u.Job != in.Job || u.EvalID != in.EvalID {
				t.Errorf("group %s: %s updated in place does not run the current job from this evaluation", g.Name, id)
			}
		}
		for id, u := range g.Reconnect {
			if u.NeedsToReconnect() {
				t.Errorf("group %s: %s reconnected still waits to reconnect", g.Name, id)
			}
		}
		checkRecords(t, in, g)
		for _, p := range g.Place {
			if p.keepPrevious && p.previousAlloc.ClientStatus != structs.AllocClientStatusUnknown {
				t.Errorf("group %s: the placement of %s keeps %s running, which is not unknown", g.Name, p.name, p.previousAlloc.ID)
			}
		}
	}
}

// checkExclusive asserts what GroupResults promises: an allocation is
// stopped, updated or ignored, never two of these.
func checkExclusive(t *testing.T, g *GroupResults) {
	t.Helper()
	seen := map[string]string{}
	mark := func(id, what string) {
		if prior, ok := seen[id]; ok {
			t.Errorf("group %s: allocation %s is both %s and %s", g.Name, id, prior, what)
		}
		seen[id] = what
	}
	for _, s := range g.Stop {
		mark(s.alloc.ID, "stopped")
	}
	for id := range g.Updates {
		mark(id, "updated")
	}
	for id := range g.Ignore {
		mark(id, "ignored")
	}
}

// groupRecords returns the reconnect decision record each allocation of
// g carries in the plan: stopped ones in their stop request, kept ones in
// their update or their record-only copy.
func groupRecords(g *GroupResults) map[string]*structs.ReconnectDecision {
	out := map[string]*structs.ReconnectDecision{}
	for _, st := range g.Stop {
		if st.alloc.ReconnectDecision != nil {
			out[st.alloc.ID] = st.alloc.ReconnectDecision
		}
	}
	for id, a := range g.Updates.union(g.Recorded) {
		if a.ReconnectDecision != nil {
			out[id] = a.ReconnectDecision
		}
	}
	return out
}

// checkRecords checks what the golden output leaves out of a reconnect
// decision record: it names this evaluation and its time, the node scores
// of both copies as placed, it is on one of the two, and the kept and the
// stopped copy carry the same record, so that `nomad alloc status` on either answers "why this
// copy and not that one?".
func checkRecords(t *testing.T, in ReconcilerInput, g *GroupResults) {
	t.Helper()
	byID := map[string]*structs.Allocation{}
	for _, a := range in.Allocs {
		byID[a.ID] = a
	}
	score := func(id string) float64 {
		if a := byID[id]; a != nil && a.Metrics != nil {
			s, _ := a.Metrics.NodeScore(a.NodeID)
			return s
		}
		return 0
	}
	recs := groupRecords(g)
	for id, rec := range recs {
		if rec.EvalID != in.EvalID || rec.Time != in.Now.UnixNano() {
			t.Errorf("group %s: the record on %s does not name this evaluation and its time: %+v", g.Name, id, rec)
		}
		if rec.KeptScore != score(rec.KeptAllocID) || rec.StoppedScore != score(rec.StoppedAllocID) {
			t.Errorf("group %s: the record on %s does not carry both copies' scores: %+v", g.Name, id, rec)
		}
		if id != rec.KeptAllocID && id != rec.StoppedAllocID {
			t.Errorf("group %s: the record on %s names neither it kept nor stopped: %+v", g.Name, id, rec)
		}
		// A kept copy compared with several carries the last comparison.
		if o, ok := recs[rec.StoppedAllocID]; ok && id == rec.KeptAllocID && *o != *rec {
			t.Errorf("group %s: %s and %s carry different records: %+v, %+v", g.Name, id, rec.StoppedAllocID, rec, o)
		}
	}
}

// describeResults prints the results in a stable, readable form: the
// counts, then one line per decision. Generated evaluations are named e1,
// e2, ... in the order the group lists them; times are relative to now.
func describeResults(res ReconcileResults, now time.Time) string {
	var b strings.Builder
	depName := func(id string) string {
		if res.Deployment != nil && id == res.Deployment.ID {
			return "new"
		}
		return id
	}
	if d := res.Deployment; d != nil {
		for _, name := range slices.Sorted(maps.Keys(d.TaskGroups)) {
			st := d.TaskGroups[name]
			fmt.Fprintf(&b, "deployment new version=%d group=%s total=%d canaries=%d %q\n", d.JobVersion, name, st.DesiredTotal, st.DesiredCanaries, d.StatusDescription)
		}
	}
	for _, u := range res.DeploymentUpdates {
		fmt.Fprintf(&b, "deployment %s -> %s %q\n", u.DeploymentID, u.Status, u.StatusDescription)
	}
	for _, g := range res.Groups {
		evals := map[string]string{}
		for i, e := range g.FollowupEvals {
			evals[e.ID] = fmt.Sprintf("e%d", i+1)
		}
		fmt.Fprintf(&b, "group %s: %s\n", g.Name, describeCounts(g.DesiredUpdates()))
		if g.DeploymentID != "" {
			fmt.Fprintf(&b, "  in deployment %s\n", depName(g.DeploymentID))
		}
		for _, s := range g.Stop {
			fmt.Fprintf(&b, "  stop %s %q", s.alloc.ID, s.statusDescription)
			if s.clientStatus != "" {
				fmt.Fprintf(&b, " client=%s", s.clientStatus)
			}
			if s.followupEvalID != "" {
				fmt.Fprintf(&b, " followup=%s", evals[s.followupEvalID])
			}
			if s.migrate {
				b.WriteString(" migrate")
			}
			b.WriteString("\n")
		}
		for _, a := range sortedAllocs(g.Updates) {
			var what []string
			for _, set := range []struct {
				name string
				s    allocSet
			}{{"inplace", g.InplaceUpdate}, {"disconnect", g.Disconnect}, {"reconnect", g.Reconnect}, {"followup", g.FollowupTagged}} {
				if _, ok := set.s[a.ID]; ok {
					what = append(what, set.name)
				}
			}
			fmt.Fprintf(&b, "  update %s %s client=%s", a.ID, strings.Join(what, ","), a.ClientStatus)
			if a.FollowupEvalID != "" {
				fmt.Fprintf(&b, " followup=%s", evals[a.FollowupEvalID])
			}
			b.WriteString("\n")
		}
		for _, p := range g.DestructiveUpdate {
			fmt.Fprintf(&b, "  destructive %s replaces %s", shortName(p.name), p.previousAlloc.ID)
			if p.stopPrevious {
				fmt.Fprintf(&b, " stop-previous=%q", p.stopDesc)
			}
			b.WriteString("\n")
		}
		for _, p := range g.Place {
			b.WriteString("  " + describePlacement(p) + "\n")
		}
		if len(g.Ignore) > 0 {
			fmt.Fprintf(&b, "  ignore %s\n", strings.Join(slices.Sorted(maps.Keys(g.Ignore)), " "))
		}
		if len(g.RescheduleLater) > 0 {
			fmt.Fprintf(&b, "  later %s\n", strings.Join(slices.Sorted(maps.Keys(g.RescheduleLater)), " "))
		}
		recs := groupRecords(g)
		for _, id := range slices.Sorted(maps.Keys(recs)) {
			rec := recs[id]
			fmt.Fprintf(&b, "  record %s rule=%s strategy=%s kept=%s stopped=%s\n", id, rec.Rule, rec.Strategy,
				cmpOr(rec.KeptAllocID, "-"), cmpOr(rec.StoppedAllocID, "-"))
		}
		for _, e := range g.FollowupEvals {
			at := e.WaitUntil.Sub(now)
			sign := "+"
			if at < 0 {
				sign = ""
			}
			fmt.Fprintf(&b, "  eval %s %s at now%s%s\n", evals[e.ID], e.TriggeredBy, sign, at)
		}
	}
	return b.String()
}

func describeCounts(du *structs.DesiredUpdates) string {
	var parts []string
	for _, c := range []struct {
		name string
		n    uint64
	}{
		{"place", du.Place}, {"stop", du.Stop}, {"ignore", du.Ignore}, {"migrate", du.Migrate},
		{"inplace", du.InPlaceUpdate}, {"destructive", du.DestructiveUpdate},
		{"disconnect", du.Disconnect}, {"reconnect", du.Reconnect},
		{"reschedule-now", du.RescheduleNow}, {"reschedule-later", du.RescheduleLater}, {"canary", du.Canary},
	} {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", c.name, c.n))
		}
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, " ")
}

func describePlacement(p placementRequest) string {
	if p.names != nil {
		names := requestNames(p)
		for i := range names {
			names[i] = shortName(names[i])
		}
		return "place " + strings.Join(names, " ")
	}
	out := "place " + shortName(p.name)
	if prev := p.previousAlloc; prev != nil {
		out += " replaces " + prev.ID
	}
	for _, f := range []struct {
		name string
		on   bool
	}{{"reschedule", p.reschedule}, {"keep-previous", p.keepPrevious}, {"lost", p.lost}, {"migrate", p.migrate}, {"canary", p.canary}} {
		if f.on {
			out += " " + f.name
		}
		if f.on && f.name == "reschedule" {
			out += fmt.Sprintf(" delay=%s", p.rescheduleDelay)
		}
	}
	if p.stopPrevious {
		out += fmt.Sprintf(" stop-previous=%q", p.stopDesc)
	}
	return out
}

// shortName drops the job ID from an allocation name: "web[2]".
func shortName(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return name[i+1:]
	}
	return name
}
