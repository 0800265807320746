package nomad

import (
	"slices"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/cronexpr"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"
	"github.com/shoenig/test/must"
	"pgregory.net/rapid"

	"github.com/nomad-edge/nomad/helper/clock"
	"github.com/nomad-edge/nomad/helper/clock/clocktest"
	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// periodicWorld is a state store and a dispatcher whose launches are
// written into the store as the leader's would be (without evaluations).
type periodicWorld struct {
	t     *testing.T
	st    *state.StateStore
	mu    sync.Mutex
	index uint64
	// launched are the child IDs in launch order.
	launched []string
}

func newPeriodicWorld(t *testing.T) *periodicWorld {
	st, err := state.NewStateStore(nil)
	must.NoError(t, err)
	return &periodicWorld{t: t, st: st, index: 100}
}

func (w *periodicWorld) upsert(job *structs.Job) {
	w.t.Helper()
	w.mu.Lock()
	w.index++
	idx := w.index
	w.mu.Unlock()
	must.NoError(w.t, w.st.UpsertJob(idx, 0, job))
}

func (w *periodicWorld) dispatcher() *periodicDispatcher {
	return newPeriodicDispatcher(periodicDeps{
		state:  func() *state.StateStore { return w.st },
		logger: hclog.NewNullLogger(),
		launch: func(req launchRequest) (launchResult, error) {
			w.upsert(req.child)
			w.mu.Lock()
			defer w.mu.Unlock()
			w.launched = append(w.launched, req.child.ID)
			return launchResult{Index: w.index}, nil
		},
	})
}

func (w *periodicWorld) launches() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.launched)
}

func periodicJob(crons []string, tz string) *structs.Job {
	job := mock.BatchJob()
	job.ID = "nightly"
	job.Periodic = &structs.PeriodicConfig{Enabled: true, Specs: crons, TimeZone: tz}
	job.Canonicalize()
	return job
}

func childID(at time.Time) string {
	return "nightly" + structs.PeriodicLaunchSuffix + strconv.FormatInt(at.Unix(), 10)
}

// ticks drives the dispatcher n times from now, each time waking exactly
// at the instant it asked for, and returns the instants it asked for: the
// first tick arms, each later one launches.
func ticks(t *testing.T, d *periodicDispatcher, now time.Time, n int) []time.Time {
	t.Helper()
	var woke []time.Time
	for range n {
		next, err := d.tick(memdb.NewWatchSet(), now)
		must.NoError(t, err)
		must.False(t, next.IsZero())
		woke = append(woke, next)
		now = next
	}
	return woke
}

// A cron expression is read in the job's time zone, and a daily launch
// follows the zone's wall clock across daylight saving changes: an
// operator who writes "09:00 Berlin" means 09:00 on both sides of the
// switch, not a fixed UTC instant.
func TestPeriodicDispatcher_LaunchTimesFollowTimeZoneAndDST(t *testing.T) {
	utc := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		must.NoError(t, err)
		return v
	}
	cases := []struct {
		name  string
		crons []string
		tz    string
		from  string
		want  []string
	}{
		{name: "utc default", crons: []string{"0 3 * * *"}, tz: "", from: "2026-03-01T12:00:00Z",
			want: []string{"2026-03-02T03:00:00Z", "2026-03-03T03:00:00Z"}},
		{name: "berlin across spring forward", crons: []string{"0 9 * * *"}, tz: "Europe/Berlin", from: "2026-03-28T00:00:00Z",
			want: []string{"2026-03-28T08:00:00Z", "2026-03-29T07:00:00Z", "2026-03-30T07:00:00Z"}},
		{name: "new york across fall back", crons: []string{"0 9 * * *"}, tz: "America/New_York", from: "2026-10-31T00:00:00Z",
			want: []string{"2026-10-31T13:00:00Z", "2026-11-01T14:00:00Z"}},
		{name: "repeated hour runs once", crons: []string{"30 1 * * *"}, tz: "America/New_York", from: "2026-10-31T12:00:00Z",
			want: []string{"2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"}},
		// Lord Howe falls back half an hour (02:00 +11 to 01:30 +10:30):
		// 01:30 and 01:45 come twice and run once (the rapid property
		// below found them launched twice).
		{name: "repeated half hour runs once", crons: []string{"*/15 1 * * *"}, tz: "Australia/Lord_Howe", from: "2026-04-04T13:50:00Z",
			want: []string{"2026-04-04T14:00:00Z", "2026-04-04T14:15:00Z", "2026-04-04T14:30:00Z", "2026-04-04T14:45:00Z", "2026-04-05T14:30:00Z"}},
		{name: "skipped hour does not run", crons: []string{"30 2 * * *"}, tz: "America/New_York", from: "2026-03-07T12:00:00Z",
			want: []string{"2026-03-09T06:30:00Z", "2026-03-10T06:30:00Z"}},
		{name: "earliest of several crons", crons: []string{"0 12 * * *", "0 6 * * *"}, tz: "Asia/Tokyo", from: "2026-06-01T00:00:00Z",
			want: []string{"2026-06-01T03:00:00Z", "2026-06-01T21:00:00Z", "2026-06-02T03:00:00Z"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newPeriodicWorld(t)
			w.upsert(periodicJob(tc.crons, tc.tz))
			d := w.dispatcher()
			woke := ticks(t, d, utc(tc.from), len(tc.want))
			var want, got, ids []string
			for i, s := range tc.want {
				want = append(want, s)
				got = append(got, woke[i].UTC().Format(time.RFC3339))
				ids = append(ids, childID(utc(s)))
			}
			must.Eq(t, want, got)
			// The last wake-up launched nothing yet: it is the next arm.
			must.Eq(t, ids[:len(ids)-1], w.launches())
		})
	}
}

// A child is named <parent>/periodic-<unix seconds>, carries ParentID and
// no periodic block (it runs once), and the parent stays without any
// evaluation or allocation of its own.
func TestPeriodicDispatcher_ChildShape(t *testing.T) {
	w := newPeriodicWorld(t)
	parent := periodicJob([]string{"*/5 * * * *"}, "UTC")
	w.upsert(parent)
	d := w.dispatcher()
	from := time.Date(2026, 5, 1, 10, 1, 0, 0, time.UTC)
	ticks(t, d, from, 2)

	at := time.Date(2026, 5, 1, 10, 5, 0, 0, time.UTC)
	child, err := w.st.JobByID(nil, parent.Namespace, childID(at))
	must.NoError(t, err)
	must.NotNil(t, child)
	must.Eq(t, "nightly", child.ParentID)
	must.Nil(t, child.Periodic)
	must.Eq(t, structs.JobTypeBatch, child.Type)
	stored, err := w.st.JobByID(nil, parent.Namespace, parent.ID)
	must.NoError(t, err)
	must.Eq(t, structs.JobStatusRunning, stored.Status, must.Sprint("a periodic parent is running until stopped"))
}

// prohibit_overlap skips a launch while an earlier child is not dead, and
// launches again at the first instant after it finished: a slow nightly
// backup must not pile up copies of itself on a small device.
func TestPeriodicDispatcher_ProhibitOverlap(t *testing.T) {
	w := newPeriodicWorld(t)
	parent := periodicJob([]string{"0 * * * *"}, "UTC")
	parent.Periodic.ProhibitOverlap = true
	w.upsert(parent)
	d := w.dispatcher()
	t0 := time.Date(2026, 5, 1, 9, 30, 0, 0, time.UTC)
	h := func(n int) time.Time { return time.Date(2026, 5, 1, 9+n, 0, 0, 0, time.UTC) }

	ticks(t, d, t0, 1)                          // arms 10:00
	_, err := d.tick(memdb.NewWatchSet(), h(1)) // launches 10:00
	must.NoError(t, err)
	must.Eq(t, []string{childID(h(1))}, w.launches())

	_, err = d.tick(memdb.NewWatchSet(), h(2)) // 11:00: the 10:00 child is still pending
	must.NoError(t, err)
	must.Eq(t, []string{childID(h(1))}, w.launches(), must.Sprint("skipped while the child runs"))

	child, err := w.st.JobByID(nil, parent.Namespace, childID(h(1)))
	must.NoError(t, err)
	done := child.Copy()
	done.Stop = true
	w.upsert(done)
	must.Eq(t, structs.JobStatusDead, mustJob(t, w.st, done).Status)

	next, err := d.tick(memdb.NewWatchSet(), h(2).Add(time.Minute))
	must.NoError(t, err)
	must.Eq(t, h(3), next.UTC(), must.Sprint("the skipped instant is not made up later"))
	_, err = d.tick(memdb.NewWatchSet(), h(3))
	must.NoError(t, err)
	must.Eq(t, []string{childID(h(1)), childID(h(3))}, w.launches())
}

func mustJob(t *testing.T, st *state.StateStore, job *structs.Job) *structs.Job {
	t.Helper()
	got, err := st.JobByID(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	must.NotNil(t, got)
	return got
}

// A stopped or disabled periodic job launches nothing, and starting it
// again re-arms it from then on.
func TestPeriodicDispatcher_StoppedAndDisabledJobsDoNotLaunch(t *testing.T) {
	w := newPeriodicWorld(t)
	parent := periodicJob([]string{"0 * * * *"}, "UTC")
	parent.Stop = true
	w.upsert(parent)
	d := w.dispatcher()
	next, err := d.tick(memdb.NewWatchSet(), time.Date(2026, 5, 1, 9, 30, 0, 0, time.UTC))
	must.NoError(t, err)
	must.True(t, next.IsZero(), must.Sprint("nothing to arm"))

	disabled := parent.Copy()
	disabled.Stop = false
	disabled.Periodic.Enabled = false
	w.upsert(disabled)
	next, err = d.tick(memdb.NewWatchSet(), time.Date(2026, 5, 1, 10, 30, 0, 0, time.UTC))
	must.NoError(t, err)
	must.True(t, next.IsZero())

	w.upsert(periodicJob([]string{"0 * * * *"}, "UTC"))
	next, err = d.tick(memdb.NewWatchSet(), time.Date(2026, 5, 1, 11, 30, 0, 0, time.UTC))
	must.NoError(t, err)
	must.Eq(t, time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC), next.UTC())
	must.SliceEmpty(t, w.launches())
}

// A new leader's dispatcher knows nothing but the state: it re-arms each
// job after its newest child, and makes up one missed launch (not one per
// missed instant) when the leader change took longer than an interval.
func TestPeriodicDispatcher_NewLeaderRearmsFromChildren(t *testing.T) {
	w := newPeriodicWorld(t)
	w.upsert(periodicJob([]string{"0 * * * *"}, "UTC"))
	h := func(n int) time.Time { return time.Date(2026, 5, 1, 9+n, 0, 0, 0, time.UTC) }
	old := w.dispatcher()
	ticks(t, old, h(0).Add(30*time.Minute), 2) // launches 10:00, arms 11:00
	must.Eq(t, []string{childID(h(1))}, w.launches())

	// Elected before 11:00: arms 11:00 from the 10:00 child.
	next, err := w.dispatcher().tick(memdb.NewWatchSet(), h(1).Add(40*time.Minute))
	must.NoError(t, err)
	must.Eq(t, h(2), next.UTC())
	must.Len(t, 1, w.launches())

	// Elected at 13:10 after a long outage: one catch-up launch now, then
	// the 14:00 instant.
	now := h(4).Add(10 * time.Minute)
	next, err = w.dispatcher().tick(memdb.NewWatchSet(), now)
	must.NoError(t, err)
	must.Eq(t, h(5), next.UTC())
	must.Eq(t, []string{childID(h(1)), childID(now)}, w.launches())
}

// The dispatcher's loop sleeps until the next instant on the server's
// clock, wakes when a periodic job is registered, stops with leadership,
// and a second loop (the next leader) carries on over the same state.
func TestPeriodicDispatcher_RunArmsAndStopsWithLeadership(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newPeriodicWorld(t)
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() { defer close(done); w.dispatcher().run(stop, clock.Real()) }()
		synctest.Wait()

		w.upsert(periodicJob([]string{"*/10 * * * *"}, "UTC")) // wakes the loop
		synctest.Wait()
		start := time.Now()
		first := start.Truncate(10 * time.Minute).Add(10 * time.Minute)
		time.Sleep(time.Until(first)) // fake time: the bubble's clock jumps
		synctest.Wait()
		must.Eq(t, []string{childID(first)}, w.launches())

		close(stop) // leadership lost
		<-done
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		must.Len(t, 1, w.launches(), must.Sprint("no launch without a leader"))

		stop2 := make(chan struct{})
		done2 := make(chan struct{})
		go func() { defer close(done2); w.dispatcher().run(stop2, clock.Real()) }()
		synctest.Wait()
		must.Len(t, 2, w.launches(), must.Sprint("catch-up launch of the missed instant"))
		time.Sleep(time.Until(first.Add(20 * time.Minute)))
		synctest.Wait()
		must.Len(t, 3, w.launches())
		close(stop2)
		<-done2
	})
}

// The leader runs the dispatcher on the server's clock: a periodic job
// registered over RPC gets its child at the next instant of the (fake)
// clock, and after leadership is revoked and established again the new
// dispatcher launches the next one.
func TestServer_PeriodicDispatcherFollowsLeadership(t *testing.T) {
	mc := clocktest.NewManual(time.Date(2026, 5, 1, 10, 0, 30, 0, time.UTC))
	s := testServer(t, func(c *Config) { c.NumSchedulers = 0; c.Clock = mc })
	job := periodicJob([]string{"* * * * *"}, "UTC")
	register(t, s, job)

	children := func(min uint64) ([]string, uint64) {
		var resp structs.JobListResponse
		req := &structs.JobListRequest{QueryOptions: structs.QueryOptions{Namespace: job.Namespace,
			Prefix: "nightly/", MinQueryIndex: min, MaxQueryTime: time.Second}}
		must.NoError(t, s.RPC("Job.List", req, &resp))
		var ids []string
		for _, j := range resp.Jobs {
			ids = append(ids, j.ID)
		}
		return ids, resp.Index
	}
	// advanceUntil moves the fake clock a minute at a time until n children
	// exist: the dispatcher may arm its timer after an advance, and then
	// fires at the following minute.
	advanceUntil := func(n int) []string {
		t.Helper()
		ids, index := children(0)
		for i := 0; len(ids) < n; i++ {
			if i == 10 {
				t.Fatalf("want %d children after 10 minutes of fake time, have %v", n, ids)
			}
			mc.Advance(time.Minute)
			ids, index = children(index)
		}
		return ids
	}
	first := advanceUntil(1)
	must.StrHasPrefix(t, "nightly/periodic-", first[0])

	s.revokeLeadership()
	must.NoError(t, s.establishLeadership())
	got := advanceUntil(2)
	must.SliceContains(t, got, first[0])
}

// For any schedule, zone and start, the dispatcher's launches are strictly
// later one after another, each at an instant the schedule names on the
// zone's wall clock, and no wall-clock instant runs twice (the repeated
// hour of a fall-back change included): a periodic job never doubles up.
func TestPeriodicDispatcher_LaunchesStrictlyIncreasing(t *testing.T) {
	zones := []string{"UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata", "America/Santiago"}
	rapid.Check(t, func(rt *rapid.T) {
		minute := rapid.SampledFrom([]string{"0", "30", "*/15", "5,45"}).Draw(rt, "minute")
		hour := rapid.SampledFrom([]string{"*", "1", "2", "0-3", "*/6"}).Draw(rt, "hour")
		cron := minute + " " + hour + " * * *"
		tz := rapid.SampledFrom(zones).Draw(rt, "tz")
		start := time.Unix(rapid.Int64Range(1_767_225_600, 1_798_761_600).Draw(rt, "start"), 0) // 2026

		w := newPeriodicWorld(t)
		w.upsert(periodicJob([]string{cron}, tz))
		woke := ticks(t, w.dispatcher(), start, 30)
		loc, err := time.LoadLocation(tz)
		must.NoError(t, err)
		exp, err := parseCronForTest(cron)
		must.NoError(t, err)
		seen := map[string]bool{}
		for i, at := range woke {
			if i > 0 && !at.After(woke[i-1]) {
				rt.Fatalf("launch %d at %s is not after %s", i, at, woke[i-1])
			}
			if got := exp.Next(at.Add(-time.Second).In(loc)); !got.Equal(at) {
				rt.Fatalf("launch at %s is not an instant of %q in %s (next is %s)", at, cron, tz, got)
			}
			wall := at.In(loc).Format("2006-01-02 15:04:05")
			if seen[wall] {
				rt.Fatalf("wall-clock instant %s in %s launched twice", wall, tz)
			}
			seen[wall] = true
		}
	})
}

func parseCronForTest(spec string) (*cronexpr.Expression, error) { return cronexpr.Parse(spec) }

// A job started again after a stop launches at its next instant, not at
// once for the instants it missed while stopped: only a leader change
// makes up a launch.
func TestPeriodicDispatcher_RestartedJobDoesNotCatchUp(t *testing.T) {
	w := newPeriodicWorld(t)
	job := periodicJob([]string{"0 * * * *"}, "UTC")
	w.upsert(job)
	h := func(n int) time.Time { return time.Date(2026, 5, 1, 9+n, 0, 0, 0, time.UTC) }
	d := w.dispatcher()
	ticks(t, d, h(0).Add(30*time.Minute), 2) // launches 10:00
	must.Len(t, 1, w.launches())

	stopped := mustJob(t, w.st, job).Copy()
	stopped.Stop = true
	w.upsert(stopped)
	_, err := d.tick(memdb.NewWatchSet(), h(3))
	must.NoError(t, err)

	started := stopped.Copy()
	started.Stop = false
	w.upsert(started)
	next, err := d.tick(memdb.NewWatchSet(), h(6).Add(10*time.Minute))
	must.NoError(t, err)
	must.Eq(t, h(7), next.UTC())
	must.Len(t, 1, w.launches(), must.Sprint("no catch-up for the hours it was stopped"))
}
