package cluster

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	nomadapi "github.com/hashicorp/nomad/api"

	"github.com/nomad-edge/nomad/e2e/internal/harness"
	"github.com/nomad-edge/nomad/e2e/internal/history"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// The chaos run's clients: workers that call the HTTP API of random
// servers for the whole run, faults or not, and record every call in a
// history.History with its invocation and completion time and its answer
// (a timeout or a 5xx is an unknown outcome). The run checks the history
// at its end (history.Check).

const (
	chaosWorkers = 4
	// opTimeout is how long a worker waits for an answer before it calls
	// the outcome unknown and moves on.
	opTimeout = 5 * time.Second
)

// workers are the run's API clients and what they know.
type workers struct {
	c    *chaos
	h    *history.History
	apis map[string]*nomadapi.Client // by server name
	// jobs, vars and nodes are the keys the workers write.
	jobs, vars, nodes []string

	mu sync.Mutex
	// known is the last index a worker learnt of each key, for its CAS.
	known map[string]uint64
	// stopped are the allocations whose stop was acknowledged; listed
	// every allocation a worker saw.
	stopped, listed map[string]bool
	tags            int

	stop chan struct{}
	wg   sync.WaitGroup
}

func newWorkers(c *chaos) *workers {
	w := &workers{
		c: c, h: history.New(), apis: map[string]*nomadapi.Client{},
		jobs: []string{"w-a", "w-b"}, vars: []string{"chaos/a", "chaos/b", "chaos/c", "chaos/d"},
		known: map[string]uint64{}, stopped: map[string]bool{}, listed: map[string]bool{},
	}
	for _, s := range c.nc.servers {
		api, err := nomadapi.NewClient(&nomadapi.Config{
			Address:    s.HTTPAddr(),
			HttpClient: &http.Client{Timeout: opTimeout, Transport: &http.Transport{MaxIdleConnsPerHost: chaosWorkers * 2}},
		})
		if err != nil {
			c.t.Fatal(err)
		}
		w.apis[s.Name] = api
	}
	return w
}

// serverAPI is a random server's API for the worker's rng.
func (w *workers) serverAPI(rng *rand.Rand) (string, *nomadapi.Client) {
	s := w.c.nc.servers[rng.IntN(len(w.c.nc.servers))]
	return s.Name, w.apis[s.Name]
}

// start runs the workers and the leader sampler until pause.
func (w *workers) start() {
	w.stop = make(chan struct{})
	for i := range chaosWorkers {
		rng := rand.New(rand.NewPCG(w.c.seed, uint64(i)<<32|uint64(w.c.rounds)))
		w.wg.Go(func() { w.run(i, rng) })
	}
	w.wg.Go(w.sampleLeaders)
}

// pause stops every worker and waits for its call in flight.
func (w *workers) pause() {
	if w.stop == nil {
		return
	}
	close(w.stop)
	w.wg.Wait()
	w.stop = nil
}

func (w *workers) stopping() bool {
	select {
	case <-w.stop:
		return true
	default:
		return false
	}
}

func (w *workers) run(id int, rng *rand.Rand) {
	for !w.stopping() {
		w.one(id, rng)
		// The pace of the clients, not a wait for logic.
		time.Sleep(time.Duration(100+rng.IntN(200)) * time.Millisecond)
	}
}

// one issues one random call.
func (w *workers) one(id int, rng *rand.Rand) {
	server, api := w.serverAPI(rng)
	job := w.jobs[rng.IntN(len(w.jobs))]
	path := w.vars[rng.IntN(len(w.vars))]
	stale := rng.IntN(3) == 0
	switch k := rng.IntN(100); {
	case k < 15:
		w.register(id, server, api, job, rng)
	case k < 22:
		w.scale(id, server, api, job, rng.IntN(3))
	case k < 25:
		w.stopJob(id, server, api, job)
	case k < 40:
		w.readJob(id, server, api, job, stale, false)
	case k < 60:
		w.writeVar(id, server, api, path, rng)
	case k < 80:
		w.readVar(id, server, api, path, stale, false)
	case k < 84:
		w.stopAlloc(id, server, api, job, rng)
	case k < 88 && len(w.nodes) > 0:
		w.eligibility(id, server, api, w.nodes[rng.IntN(len(w.nodes))], rng.IntN(2) == 0)
	case k < 90 && len(w.nodes) > 0:
		w.drain(id, server, api, w.nodes[rng.IntN(len(w.nodes))], rng.IntN(2) == 0)
	case len(w.nodes) > 0:
		w.readNode(id, server, api, w.nodes[rng.IntN(len(w.nodes))], stale, false)
	}
}

// record adds op, finished now, with the outcome err says.
func (w *workers) record(op history.Op, err error) history.Op {
	op.Return = w.h.Now()
	op.Outcome, op.Err = outcome(err)
	op = w.h.Add(op)
	return op
}

// outcome classifies an API error: none is OK, a 4xx a refusal, anything
// else (timeout, reset, 5xx) unknown.
func outcome(err error) (history.Outcome, string) {
	if err == nil {
		return history.OK, ""
	}
	msg := err.Error()
	if len(msg) > 160 {
		msg = msg[:160]
	}
	var cas nomadapi.ErrCASConflict
	if errors.As(err, &cas) {
		return history.Fail, msg
	}
	if code := statusCode(err); code >= 400 && code < 500 {
		return history.Fail, msg
	}
	return history.Unknown, msg
}

var statusRE = regexp.MustCompile(`Unexpected response code: (\d{3})`)

func statusCode(err error) int {
	var ue nomadapi.UnexpectedResponseError
	if errors.As(err, &ue) && ue.HasStatusCode() {
		return ue.StatusCode()
	}
	if m := statusRE.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

func (w *workers) learn(key string, idx uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if idx > w.known[key] {
		w.known[key] = idx
	}
}

func (w *workers) index(key string) uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.known[key]
}

func (w *workers) tag(worker int) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.tags++
	return fmt.Sprintf("w%d-%d", worker, w.tags)
}

// workerJob is a worker's job: count sleeps anywhere, no disconnect
// window, its tag in the job's meta.
func workerJob(id, tag string, count int) *nomadapi.Job {
	j := sleepJob(id, count)
	j.TaskGroups[0].Constraints = nil
	j.Meta = map[string]string{"chaos": tag}
	delay := time.Second
	j.TaskGroups[0].ReschedulePolicy = &nomadapi.ReschedulePolicy{Delay: &delay, DelayFunction: new("constant"), Unlimited: new(true)}
	return j
}

func (w *workers) register(id int, server string, api *nomadapi.Client, job string, rng *rand.Rand) {
	key := "job/" + job
	op := history.Op{Worker: id, Server: server, Kind: history.JobRegister, Key: key, Call: w.h.Now()}
	op.In = history.Value{Tag: w.tag(id), Count: rng.IntN(3)}
	opts := &nomadapi.RegisterOptions{}
	if rng.IntN(4) > 0 {
		op.CAS, op.CASIndex = true, w.index(key)
		opts.EnforceIndex, opts.ModifyIndex = true, op.CASIndex
	}
	resp, _, err := api.Jobs().RegisterOpts(workerJob(job, op.In.Tag, op.In.Count), opts, nil)
	if err == nil {
		op.Out.Index = resp.JobModifyIndex
		w.learn(key, resp.JobModifyIndex)
	}
	w.record(op, err)
}

func (w *workers) scale(id int, server string, api *nomadapi.Client, job string, count int) {
	op := history.Op{Worker: id, Server: server, Kind: history.JobScale, Key: "job/" + job, In: history.Value{Count: count}, Call: w.h.Now()}
	resp, _, err := api.Jobs().Scale(job, "sleep", &count, "chaos", false, nil, nil)
	if err == nil {
		op.Out.Index = resp.JobModifyIndex
	}
	w.record(op, err)
}

func (w *workers) stopJob(id int, server string, api *nomadapi.Client, job string) {
	op := history.Op{Worker: id, Server: server, Kind: history.JobStop, Key: "job/" + job, Call: w.h.Now()}
	_, wm, err := api.Jobs().Deregister(job, false, nil)
	if err == nil && wm != nil {
		op.Out.Index = wm.LastIndex
	}
	w.record(op, err)
}

func (w *workers) readJob(id int, server string, api *nomadapi.Client, job string, stale, final bool) history.Op {
	key := "job/" + job
	op := history.Op{Worker: id, Server: server, Kind: history.JobRead, Key: key, Stale: stale, Final: final, Call: w.h.Now()}
	j, _, err := api.Jobs().Info(job, &nomadapi.QueryOptions{AllowStale: stale})
	switch {
	case err == nil:
		op.Out = history.Value{Exists: true, Tag: j.Meta["chaos"], Stop: j.Stop != nil && *j.Stop,
			Version: *j.Version, Index: *j.JobModifyIndex}
		if len(j.TaskGroups) > 0 && j.TaskGroups[0].Count != nil {
			op.Out.Count = *j.TaskGroups[0].Count
		}
		if !stale {
			w.learn(key, op.Out.Index)
		}
	case statusCode(err) == http.StatusNotFound:
		err = nil // absent is an answer
	}
	return w.record(op, err)
}

func (w *workers) writeVar(id int, server string, api *nomadapi.Client, path string, rng *rand.Rand) {
	key := "var/" + path
	op := history.Op{Worker: id, Server: server, Kind: history.VarWrite, Key: key, CAS: true, CASIndex: w.index(key), Call: w.h.Now()}
	if rng.IntN(5) == 0 {
		op.CASIndex = 0 // a create, which must fail once it exists
	}
	op.In.Tag = w.tag(id)
	v, _, err := api.Variables().CheckedUpdate(&nomadapi.Variable{Path: path, Items: nomadapi.VariableItems{"v": op.In.Tag}, ModifyIndex: op.CASIndex}, nil)
	var cas nomadapi.ErrCASConflict
	switch {
	case err == nil:
		op.Out.Index = v.ModifyIndex
		w.learn(key, v.ModifyIndex)
	case errors.As(err, &cas) && cas.Conflict != nil:
		w.learn(key, cas.Conflict.ModifyIndex)
	}
	w.record(op, err)
}

func (w *workers) readVar(id int, server string, api *nomadapi.Client, path string, stale, final bool) history.Op {
	key := "var/" + path
	op := history.Op{Worker: id, Server: server, Kind: history.VarRead, Key: key, Stale: stale, Final: final, Call: w.h.Now()}
	v, _, err := api.Variables().Read(path, &nomadapi.QueryOptions{AllowStale: stale})
	switch {
	case err == nil:
		op.Out = history.Value{Exists: true, Tag: v.Items["v"], Index: v.ModifyIndex}
		if !stale {
			w.learn(key, v.ModifyIndex)
		}
	case errors.Is(err, nomadapi.ErrVariablePathNotFound) || statusCode(err) == http.StatusNotFound:
		err = nil
	}
	return w.record(op, err)
}

// stopAlloc stops one of the job's allocations that should run. The
// listing is not an op of the history; what it shows must stay in the
// state (checked at every settle).
func (w *workers) stopAlloc(id int, server string, api *nomadapi.Client, job string, rng *rand.Rand) {
	list, _, err := api.Jobs().Allocations(job, false, nil)
	if err != nil {
		return
	}
	var live []string
	w.mu.Lock()
	for _, a := range list {
		w.listed[a.ID] = true
		if a.DesiredStatus == "run" {
			live = append(live, a.ID)
		}
	}
	w.mu.Unlock()
	if len(live) == 0 {
		return
	}
	alloc := live[rng.IntN(len(live))]
	op := history.Op{Worker: id, Server: server, Kind: history.AllocStop, Key: "alloc/" + alloc, Call: w.h.Now()}
	resp, err := api.Allocations().Stop(&nomadapi.Allocation{ID: alloc}, nil)
	if err == nil {
		op.Out.Index = resp.LastIndex
		w.mu.Lock()
		w.stopped[alloc] = true
		w.mu.Unlock()
	}
	w.record(op, err)
}

func (w *workers) eligibility(id int, server string, api *nomadapi.Client, node string, eligible bool) {
	op := history.Op{Worker: id, Server: server, Kind: history.NodeEligibility, Key: "node/" + node, In: history.Value{Eligible: eligible}, Call: w.h.Now()}
	_, err := api.Nodes().ToggleEligibility(node, eligible, nil)
	w.record(op, err)
}

// drain starts a short drain that leaves system jobs, or cancels one and
// marks the node eligible.
func (w *workers) drain(id int, server string, api *nomadapi.Client, node string, on bool) history.Op {
	op := history.Op{Worker: id, Server: server, Kind: history.NodeDrain, Key: "node/" + node, In: history.Value{Draining: on}, Call: w.h.Now()}
	var spec *nomadapi.DrainSpec
	if on {
		spec = &nomadapi.DrainSpec{Deadline: 10 * time.Second, IgnoreSystemJobs: true}
	}
	_, err := api.Nodes().UpdateDrain(node, spec, !on, nil)
	return w.record(op, err)
}

func (w *workers) readNode(id int, server string, api *nomadapi.Client, node string, stale, final bool) history.Op {
	op := history.Op{Worker: id, Server: server, Kind: history.NodeRead, Key: "node/" + node, Stale: stale, Final: final, Call: w.h.Now()}
	n, _, err := api.Nodes().Info(node, &nomadapi.QueryOptions{AllowStale: stale})
	if err == nil {
		op.Out = history.Value{Exists: true, Eligible: n.SchedulingEligibility == "eligible", Draining: n.DrainStrategy != nil}
	}
	return w.record(op, err)
}

// sampleLeaders asks every server for its raft state and term, four
// times a second, for the one-leader-per-term check.
func (w *workers) sampleLeaders() {
	for !w.stopping() {
		for _, s := range w.c.nc.servers {
			self, err := w.apis[s.Name].Agent().Self()
			if err != nil {
				continue
			}
			raft := self.Stats["raft"]
			term, _ := strconv.ParseUint(raft["term"], 10, 64)
			w.h.Sample(history.LeaderSample{Server: s.Name, State: raft["state"], Term: term, At: w.h.Now()})
		}
		time.Sleep(250 * time.Millisecond) // the sampling period
	}
}

// settle is the workers' part of a settled cluster, run with them paused
// and every fault healed: every drain cancelled and node eligible (as
// recorded ops, so the model knows), then a non-stale read of every key
// (the history's final values).
func (w *workers) settle() {
	name := w.c.nc.anyServer().Name
	api := w.apis[name]
	if len(w.nodes) == 0 {
		nodes, _, err := api.Nodes().List(nil)
		if err != nil {
			w.c.fatalf("listing nodes: %v", err)
		}
		for _, n := range nodes {
			w.nodes = append(w.nodes, n.ID)
		}
	}
	id := chaosWorkers // the settler's own lane in the visualization
	// Each cancel is tried until one is acknowledged, through the servers
	// in turn: a server started a moment ago may not listen yet (seed
	// 1993548099 sent all four to one, refused, and left the nodes
	// ineligible, so a job could not be placed again).
	servers := w.c.nc.servers
	for _, n := range w.nodes {
		attempt := 0
		wait.Poll(w.c.t, time.Minute, "the settler's drain cancel on node "+n, func() (bool, string) {
			s := servers[attempt%len(servers)].Name
			attempt++
			op := w.drain(id, s, w.apis[s], n, false)
			return op.Outcome == history.OK, s + ": " + op.Err
		})
	}
}

// finalReads reads every key, settled, through the leader: the values
// the next segment of the history starts from (history.Op.Final). A read
// without an answer is tried again.
func (w *workers) finalReads() {
	id := chaosWorkers
	servers := w.c.nc.servers
	attempt := 0
	// Through the servers in turn, until one answers: a server started a
	// moment ago may not listen yet.
	final := func(what string, read func(name string, api *nomadapi.Client) history.Op) {
		wait.Poll(w.c.t, time.Minute, "a settled cluster's final read of "+what, func() (bool, string) {
			name := servers[attempt%len(servers)].Name
			attempt++
			op := read(name, w.apis[name])
			return op.Outcome == history.OK, name + ": " + op.Err
		})
	}
	for _, j := range w.jobs {
		final("job "+j, func(name string, api *nomadapi.Client) history.Op { return w.readJob(id, name, api, j, false, true) })
	}
	for _, v := range w.vars {
		final("variable "+v, func(name string, api *nomadapi.Client) history.Op { return w.readVar(id, name, api, v, false, true) })
	}
	for _, n := range w.nodes {
		final("node "+n, func(name string, api *nomadapi.Client) history.Op { return w.readNode(id, name, api, n, false, true) })
	}
}

// checkSettled is the workers' invariants of a settled cluster: each
// worker job runs the count it reads (none when stopped), every
// allocation a worker saw listed is still in the state (unless the
// servers may have collected it, chaos.collected), and every allocation
// whose stop was acknowledged no longer should run.
func (w *workers) checkSettled(have map[string]string) error {
	api := w.c.nc.anyServer().API()
	for _, job := range w.jobs {
		j, _, err := api.Jobs().Info(job, nil)
		if err != nil {
			if strings.Contains(err.Error(), "404") {
				continue
			}
			return err
		}
		want := 0
		if !*j.Stop {
			want = *j.TaskGroups[0].Count
		}
		as, err := w.c.nc.allocs(job)
		if err != nil {
			return err
		}
		for _, a := range as {
			w.c.seen[a.ID] = true
		}
		if n := len(running(as)); n != want {
			return fmt.Errorf("worker job %s (v%d, stop=%v): %d allocations running, want %d: %s", job, *j.Version, *j.Stop, n, want, describeAllocs(as))
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for id := range w.listed {
		if _, ok := have[id]; !ok {
			if w.c.collected(id) {
				delete(w.listed, id)
				continue
			}
			w.c.fatalf("allocation %s, listed by a worker, is missing from the state", id)
		}
	}
	for id := range w.stopped {
		if _, ok := have[id]; !ok && w.c.collected(id) {
			delete(w.stopped, id)
			continue
		}
		if d, ok := have[id]; !ok || d == "run" {
			return fmt.Errorf("allocation %s: its stop was acknowledged, yet it is desired %q", id[:8], d)
		}
	}
	return nil
}

// otherServers are the names of every server but s.
func otherServers(nc *netCluster, s *harness.Agent) []string {
	var out []string
	for _, o := range nc.servers {
		if o != s {
			out = append(out, o.Name)
		}
	}
	return out
}
