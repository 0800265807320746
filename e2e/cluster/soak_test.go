package cluster

import (
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nomad-edge/nomad/e2e/internal/harness"
)

var (
	soakDuration = flag.Duration("soak.duration", 0, "run TestSoak for this long (0: skip it)")
	soakSeed     = flag.Uint64("soak.seed", 0, "TestSoak's seed (0: a random one, printed)")
	soakEvery    = flag.Duration("soak.sample", 15*time.Second, "how often TestSoak samples every agent")
)

// soakServerSettings bring the servers to a steady state within the
// warm-up, so that what grows after it is a leak and not the state: raft
// compacts its log every 512 entries (upstream's default, 8,192, compacts
// a few times an hour at this rate), and finished evaluations, with their
// finished allocations, and deployments are collected two minutes after
// they end (upstream keeps them an hour, as long as the soak). Jobs are
// not collected (a stopped job's read must still find it: the history's
// model) and keep their last versions only.
const soakServerSettings = `
  raft_snapshot_threshold = 512
  raft_snapshot_interval  = "5s"
  raft_trailing_logs      = 512
  eval_gc_threshold       = "2m"
  deployment_gc_threshold = "2m"
`

// The soak (`make soak`; -soak.duration, -soak.seed): the chaos run's
// cluster, jobs and workers (three servers, four clients in their own
// network namespaces; registrations, updates, scales, stops, drains and
// variable writes all through) with disconnects only, as an edge fleet
// lives: in each round one or two clients lose their link for 5 to 60 s,
// past their TTL, and come back. Every round settles with the chaos
// run's invariants (exactly count running, nothing restarted, nothing
// lost; an allocation that was finished when last listed may be
// garbage-collected) and the history is checked at the end as the chaos
// run's. Every
// agent is sampled all through: resident memory, goroutines, open file
// descriptors and, on servers, the raft directory's size. After a
// warm-up, no series may grow from its first third to its last and rise
// through the middle one (soakSeries' bounds); the table of every series
// is logged, and written as CSV beside the history.
func TestSoak(t *testing.T) {
	if *soakDuration == 0 {
		t.Skip("soak: give -soak.duration (make soak)")
	}
	seed := pickSeed(*soakSeed)
	t.Logf("soak seed %d, duration %v (run again with -soak.seed=%d)", seed, *soakDuration, seed)
	c := newChaos(t, seed, soakServerSettings)
	c.collects = true
	c.nc.startAll()
	c.registerJobs()

	s := newSampler(c, *soakEvery)
	began := time.Now()
	var grown []string
	// The samples are reported however the run ends: a run that failed
	// an invariant an hour in still says how its agents' resources went.
	reported := false
	report := func() {
		if reported {
			return
		}
		reported = true
		s.stop()
		var table string
		table, grown = s.judge()
		t.Logf("soak seed %d: %d rounds in %v, events %v; %d samples per agent every %v\n%s",
			seed, c.rounds, time.Since(began).Round(time.Second), c.counts, s.samples(), *soakEvery, table)
		if dir := c.artifactsDir(); dir != "" {
			path := filepath.Join(dir, fmt.Sprintf("soak-%d.csv", seed))
			if err := os.WriteFile(path, []byte(s.csv()), 0o644); err != nil {
				t.Logf("keeping the samples: %v", err)
			} else {
				t.Logf("soak samples: %s", path)
			}
		}
	}
	t.Cleanup(report)
	end := began.Add(*soakDuration)
	for time.Now().Before(end) {
		c.rounds++
		c.w.start()
		for range 1 + c.rng.IntN(2) {
			c.cutOne()
		}
		time.Sleep(time.Duration(5+c.rng.IntN(56)) * time.Second) // the cut's length, not a wait for logic
		c.settle()
	}
	report()
	c.checkHistory()
	if len(grown) > 0 {
		c.fatalf("soak seed %d: resources grew through the run:\n  %s", seed, strings.Join(grown, "\n  "))
	}
}

// soakSeries are what the sampler reads of each agent, and how much a
// series may grow from its first third to its last before it is called a
// trend: a fraction of the first third's median plus a floor, so that a
// small series is not judged by its noise.
var soakSeries = []struct {
	name  string
	frac  float64
	floor float64
}{
	{"rss_mib", 0.20, 8},
	{"goroutines", 0.10, 30},
	{"fds", 0.10, 16},
	{"raft_mib", 0.50, 4},
}

// soakFDsPerTask is what a client holds open for each raw_exec task it
// runs: the task's pidfd, its two log files and the two pipes they are
// fed from (measured: a dev agent held 13 files, 63 with ten tasks, 13
// again once they stopped). A client's fds series is its open files less
// this much a task.
const soakFDsPerTask = 5

// sampler reads every agent's resources at an interval, until stop.
type sampler struct {
	c      *chaos
	mu     sync.Mutex
	at     []time.Time
	values map[string][]float64 // agent/series -> one value per sample
	quit   chan struct{}
	done   chan struct{}
}

func newSampler(c *chaos, every time.Duration) *sampler {
	s := &sampler{c: c, values: map[string][]float64{}, quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			s.sample()
			select {
			case <-s.quit:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

func (s *sampler) stop() { close(s.quit); <-s.done }

func (s *sampler) samples() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.at)
}

// sample reads each agent once. A value that cannot be read (an agent
// cut off answers no metrics) repeats the agent's last one, so that
// every series has one value per sample.
func (s *sampler) sample() {
	read := map[string]float64{}
	for _, a := range s.c.nc.agents.All() {
		if !a.Running() {
			continue
		}
		r := agentResources(a)
		if r.rssMiB >= 0 {
			read[a.Name+"/rss_mib"] = r.rssMiB
		}
		if r.fds >= 0 {
			read[a.Name+"/fds"] = float64(r.fds)
		}
		if r.fds >= 0 && !slices.Contains(s.c.nc.servers, a) {
			// A client holds files for each task it runs, and the tasks
			// move between clients as they are cut and healed: what is
			// judged is what it holds beyond them.
			tasks := len(harness.PIDsWithEnv("NOMAD_ALLOC_DIR=" + filepath.Join(a.DataDir, "alloc") + "/"))
			read[a.Name+"/tasks"] = float64(tasks)
			read[a.Name+"/fds_raw"] = float64(r.fds)
			read[a.Name+"/fds"] = float64(r.fds - soakFDsPerTask*tasks)
		}
		if r.goroutines >= 0 {
			read[a.Name+"/goroutines"] = float64(r.goroutines)
		}
		if slices.Contains(s.c.nc.servers, a) {
			read[a.Name+"/raft_mib"] = float64(dirBytes(filepath.Join(a.DataDir, "server", "raft"))) / (1 << 20)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.at = append(s.at, time.Now())
	n := len(s.at)
	for k, v := range read {
		if len(s.values[k]) < n-1 { // first read after misses: fill them with it
			s.values[k] = append(s.values[k], slices.Repeat([]float64{v}, n-1-len(s.values[k]))...)
		}
		s.values[k] = append(s.values[k], v)
	}
	for k, vs := range s.values {
		if len(vs) < n {
			s.values[k] = append(vs, vs[len(vs)-1])
		}
	}
}

// judge is the table of every series (the medians of the thirds after
// the warm-up, and the peak) and the series that grew.
func (s *sampler) judge() (string, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "%-22s %10s %10s %10s %10s\n", "agent/series", "first", "middle", "last", "peak")
	var grown []string
	for _, k := range slices.Sorted(maps.Keys(s.values)) {
		vs := s.values[k]
		warm := len(vs) / 4 // the first quarter: caches fill, jobs place, the log reaches its first compaction
		rest := vs[warm:]
		if len(rest) < 3 {
			continue
		}
		third := len(rest) / 3
		first, middle, last := median(rest[:third]), median(rest[third:2*third]), median(rest[2*third:])
		fmt.Fprintf(&b, "%-22s %10.1f %10.1f %10.1f %10.1f\n", k, first, middle, last, slices.Max(vs))
		for _, ser := range soakSeries {
			if !strings.HasSuffix(k, "/"+ser.name) {
				continue
			}
			if bound := first*(1+ser.frac) + ser.floor; last > bound && middle > first {
				grown = append(grown, fmt.Sprintf("%s: %.1f → %.1f → %.1f (bound %.1f)", k, first, middle, last, bound))
			}
		}
	}
	return b.String(), grown
}

// csv is every sample: a column per agent/series.
func (s *sampler) csv() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := slices.Sorted(maps.Keys(s.values))
	var b strings.Builder
	b.WriteString("time," + strings.Join(keys, ",") + "\n")
	for i, at := range s.at {
		b.WriteString(at.UTC().Format(time.RFC3339))
		for _, k := range keys {
			b.WriteString("," + strconv.FormatFloat(s.values[k][i], 'f', 1, 64))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func median(vs []float64) float64 {
	s := slices.Sorted(slices.Values(vs))
	return s[len(s)/2]
}

// procStatusKB reads a "Name: N kB" line of /proc/<pid>/status.
func procStatusKB(pid int, name string) (int, error) {
	buf, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(buf), "\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no %s", pid, name)
}

// resources is what the soak reads of an agent's process; -1 where it
// could not be read (an agent cut off answers no metrics).
type resources struct {
	rssMiB          float64
	goroutines, fds int
}

func (r resources) String() string {
	return fmt.Sprintf("rss %.0f MiB, %d goroutines, %d open files", r.rssMiB, r.goroutines, r.fds)
}

func agentResources(a *harness.Agent) resources {
	r := resources{rssMiB: -1, goroutines: -1, fds: -1}
	pid := a.PID()
	if kb, err := procStatusKB(pid, "VmRSS"); err == nil {
		r.rssMiB = float64(kb) / 1024
	}
	if fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
		r.fds = len(fds)
	}
	var m struct {
		Gauges []struct {
			Name  string
			Value float64
		}
	}
	if err := a.GetJSON("/v1/metrics", &m); err == nil {
		for _, g := range m.Gauges {
			if g.Name == "nomad.runtime.num_goroutines" {
				r.goroutines = int(g.Value)
			}
		}
	}
	return r
}

// dirBytes is the size of the files under dir.
func dirBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}
