package structs_test

import (
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// The legacy max_client_disconnect and the block's lost_after mean the same
// (see docs/concepts/disconnected-clients.md,
// "Configuration and validation"); the block wins when it sets a window, and
// zero means off.
func TestTaskGroup_LostAfter(t *testing.T) {
	cases := []struct {
		name   string
		tg     *structs.TaskGroup
		expect time.Duration
	}{
		{"nil group", nil, 0},
		{"nothing set", &structs.TaskGroup{}, 0},
		{"legacy", &structs.TaskGroup{MaxClientDisconnect: ptr(time.Hour)}, time.Hour},
		{"legacy zero", &structs.TaskGroup{MaxClientDisconnect: ptr(time.Duration(0))}, 0},
		{"block", &structs.TaskGroup{Disconnect: &structs.DisconnectStrategy{LostAfter: time.Hour}}, time.Hour},
		{"empty block", &structs.TaskGroup{Disconnect: &structs.DisconnectStrategy{}}, 0},
		{"empty block keeps legacy", &structs.TaskGroup{MaxClientDisconnect: ptr(time.Hour), Disconnect: &structs.DisconnectStrategy{}}, time.Hour},
		{"block wins", &structs.TaskGroup{MaxClientDisconnect: ptr(time.Hour), Disconnect: &structs.DisconnectStrategy{LostAfter: time.Minute}}, time.Minute},
	}
	for _, tc := range cases {
		must.Eq(t, tc.expect, tc.tg.LostAfter(), must.Sprint(tc.name))
	}
}

// stop_after_client_disconnect and stop_on_client_after mean the same
// (see docs/concepts/disconnected-clients.md, "Configuration and validation",
// "stop_on_client_after"); unset means the client never stops the group on
// its own.
func TestTaskGroup_StopOnClientAfter(t *testing.T) {
	cases := []struct {
		name   string
		tg     *structs.TaskGroup
		expect time.Duration
	}{
		{"nil group", nil, 0},
		{"nothing set", &structs.TaskGroup{}, 0},
		{"legacy", &structs.TaskGroup{StopAfterClientDisconnect: ptr(90 * time.Second)}, 90 * time.Second},
		{"block", &structs.TaskGroup{Disconnect: &structs.DisconnectStrategy{StopOnClientAfter: ptr(time.Minute)}}, time.Minute},
		{"block without stop keeps legacy", &structs.TaskGroup{
			StopAfterClientDisconnect: ptr(90 * time.Second), Disconnect: &structs.DisconnectStrategy{LostAfter: time.Hour},
		}, 90 * time.Second},
		{"block zero", &structs.TaskGroup{Disconnect: &structs.DisconnectStrategy{StopOnClientAfter: ptr(time.Duration(0))}}, 0},
	}
	for _, tc := range cases {
		must.Eq(t, tc.expect, tc.tg.StopOnClientAfter(), must.Sprint(tc.name))
	}
}

// A replacement may be placed while the original is unknown unless the
// group says replace = false (see docs/concepts/disconnected-clients.md,
// "Replacement while unknown"); the default is true.
func TestTaskGroup_ReplaceOnDisconnect(t *testing.T) {
	must.True(t, (*structs.TaskGroup)(nil).ReplaceOnDisconnect())
	must.True(t, (&structs.TaskGroup{}).ReplaceOnDisconnect())
	must.True(t, (&structs.TaskGroup{Disconnect: &structs.DisconnectStrategy{}}).ReplaceOnDisconnect())
	must.True(t, (&structs.TaskGroup{Disconnect: &structs.DisconnectStrategy{Replace: ptr(true)}}).ReplaceOnDisconnect())
	must.False(t, (&structs.TaskGroup{Disconnect: &structs.DisconnectStrategy{Replace: ptr(false)}}).ReplaceOnDisconnect())
}

// The reconcile strategy defaults to best_score and otherwise is what the
// group set (see docs/concepts/disconnected-clients.md,
// "Resolution strategies").
func TestTaskGroup_ReconcileStrategy(t *testing.T) {
	must.Eq(t, structs.ReconcileOptionBestScore, (*structs.TaskGroup)(nil).ReconcileStrategy())
	must.Eq(t, structs.ReconcileOptionBestScore, (&structs.TaskGroup{}).ReconcileStrategy())
	must.Eq(t, structs.ReconcileOptionBestScore, (&structs.TaskGroup{Disconnect: &structs.DisconnectStrategy{}}).ReconcileStrategy())
	for _, opt := range structs.ReconcileOptions {
		tg := &structs.TaskGroup{Disconnect: &structs.DisconnectStrategy{Reconcile: opt}}
		must.Eq(t, opt, tg.ReconcileStrategy())
	}
	must.Eq(t, []string{"best_score", "keep_original", "keep_replacement", "longest_running"}, structs.ReconcileOptions)
}

// The disconnect rules of "Configuration and validation"
// (docs/concepts/disconnected-clients.md),
// each alone: negative durations; a lost
// window together with a client stop in any legacy/block mix; the legacy
// and block spelling of the same setting together; a client stop on system
// and sysbatch jobs; an unknown reconcile strategy (listing the four). A
// zero window ("0s") means off and is accepted everywhere.
func TestJob_Validate_DisconnectRules(t *testing.T) {
	const g = "Task group web validation failed: "
	const contradict = g + "a lost window (max_client_disconnect / disconnect.lost_after) and a client stop (stop_after_client_disconnect / disconnect.stop_on_client_after) contradict each other; set only one"
	zero := time.Duration(0)
	cases := []struct {
		name    string
		jobType string
		legacy  *time.Duration // max_client_disconnect
		legStop *time.Duration // stop_after_client_disconnect
		block   *structs.DisconnectStrategy
		want    []string
	}{
		{name: "legacy window", legacy: ptr(time.Hour)},
		{name: "legacy stop", legStop: ptr(90 * time.Second)},
		{name: "full block", block: &structs.DisconnectStrategy{LostAfter: time.Hour, Replace: ptr(false), Reconcile: structs.ReconcileOptionKeepOriginal}},
		{name: "block stop", block: &structs.DisconnectStrategy{StopOnClientAfter: ptr(90 * time.Second)}},
		{name: "system job with a lost window", jobType: structs.JobTypeSystem, legacy: ptr(time.Hour)},
		{name: "sysbatch job with a block window", jobType: structs.JobTypeSysBatch, block: &structs.DisconnectStrategy{LostAfter: time.Hour}},

		{name: "negative legacy window", legacy: ptr(-time.Second), want: []string{g + "max_client_disconnect can't be negative"}},
		{name: "negative legacy stop", legStop: ptr(-time.Second), want: []string{g + "stop_after_client_disconnect can't be negative"}},
		{name: "negative lost_after", block: &structs.DisconnectStrategy{LostAfter: -time.Second},
			want: []string{g + "disconnect.lost_after can't be negative"}},
		{name: "negative stop_on_client_after", block: &structs.DisconnectStrategy{StopOnClientAfter: ptr(-time.Second)},
			want: []string{g + "disconnect.stop_on_client_after can't be negative"}},

		{name: "legacy window and legacy stop", legacy: ptr(time.Hour), legStop: ptr(time.Minute), want: []string{contradict}},
		{name: "legacy window and block stop", legacy: ptr(time.Hour),
			block: &structs.DisconnectStrategy{StopOnClientAfter: ptr(time.Minute)}, want: []string{contradict}},
		{name: "block window and legacy stop", legStop: ptr(time.Minute),
			block: &structs.DisconnectStrategy{LostAfter: time.Hour}, want: []string{contradict}},
		{name: "block window and block stop",
			block: &structs.DisconnectStrategy{LostAfter: time.Hour, StopOnClientAfter: ptr(time.Minute)}, want: []string{contradict}},

		{name: "window in both spellings", legacy: ptr(time.Hour), block: &structs.DisconnectStrategy{LostAfter: time.Hour},
			want: []string{g + "max_client_disconnect and disconnect.lost_after both set; use only disconnect.lost_after"}},
		{name: "stop in both spellings", legStop: ptr(time.Minute), block: &structs.DisconnectStrategy{StopOnClientAfter: ptr(time.Minute)},
			want: []string{g + "stop_after_client_disconnect and disconnect.stop_on_client_after both set; use only disconnect.stop_on_client_after"}},

		{name: "legacy stop on system", jobType: structs.JobTypeSystem, legStop: ptr(time.Minute),
			want: []string{g + "stop_after_client_disconnect / disconnect.stop_on_client_after can't be used with system jobs"}},
		{name: "block stop on sysbatch", jobType: structs.JobTypeSysBatch, block: &structs.DisconnectStrategy{StopOnClientAfter: ptr(time.Minute)},
			want: []string{g + "stop_after_client_disconnect / disconnect.stop_on_client_after can't be used with sysbatch jobs"}},
		{name: "legacy stop on batch", jobType: structs.JobTypeBatch, legStop: ptr(time.Minute)},

		{name: "unknown reconcile", block: &structs.DisconnectStrategy{LostAfter: time.Hour, Reconcile: "newest"},
			want: []string{g + `disconnect.reconcile "newest" is not one of [best_score keep_original keep_replacement longest_running]`}},
		{name: "reconcile is case-sensitive", block: &structs.DisconnectStrategy{Reconcile: "Best_Score"},
			want: []string{g + `disconnect.reconcile "Best_Score" is not one of [best_score keep_original keep_replacement longest_running]`}},

		{name: "zero legacy window with a stop", legacy: &zero, legStop: ptr(time.Minute)},
		{name: "zero lost_after with a stop", block: &structs.DisconnectStrategy{LostAfter: 0, StopOnClientAfter: ptr(time.Minute)}},
		{name: "zero window and zero stop", legacy: &zero, legStop: &zero},
		{name: "zero legacy stop on system", jobType: structs.JobTypeSystem, legStop: &zero},
		{name: "zero block stop on sysbatch", jobType: structs.JobTypeSysBatch, block: &structs.DisconnectStrategy{StopOnClientAfter: &zero}},
		{name: "window with a zero block stop", legacy: ptr(time.Hour), block: &structs.DisconnectStrategy{StopOnClientAfter: &zero}},

		{name: "offline_restart opt-out", block: &structs.DisconnectStrategy{LostAfter: time.Hour, OfflineRestart: ptr(false)}},
		{name: "offline_restart with a legacy window", legacy: ptr(time.Hour), block: &structs.DisconnectStrategy{OfflineRestart: ptr(true)}},
		{name: "offline_restart false without a window", block: &structs.DisconnectStrategy{OfflineRestart: ptr(false)}},
		{name: "offline_restart true without a window", block: &structs.DisconnectStrategy{OfflineRestart: ptr(true)},
			want: []string{g + "disconnect.offline_restart = true needs a lost window (disconnect.lost_after or max_client_disconnect)"}},

		{name: "every disconnect mistake at once", jobType: structs.JobTypeSystem,
			legacy: ptr(time.Hour), legStop: ptr(time.Minute),
			block: &structs.DisconnectStrategy{LostAfter: time.Hour, StopOnClientAfter: ptr(-time.Minute), Reconcile: "nope"},
			want: []string{
				g + "disconnect.stop_on_client_after can't be negative",
				g + `disconnect.reconcile "nope" is not one of [best_score keep_original keep_replacement longest_running]`,
				g + "max_client_disconnect and disconnect.lost_after both set; use only disconnect.lost_after",
				contradict,
				g + "stop_after_client_disconnect / disconnect.stop_on_client_after can't be used with system jobs",
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := mock.Job()
			if tc.jobType != "" {
				job.Type = tc.jobType
				job.TaskGroups[0].ReschedulePolicy = structs.NewReschedulePolicy(tc.jobType)
				job.TaskGroups[0].Count = 1
			}
			tg := job.TaskGroups[0]
			tg.MaxClientDisconnect, tg.StopAfterClientDisconnect, tg.Disconnect = tc.legacy, tc.legStop, tc.block
			must.Eq(t, tc.want, validationProblems(t, job))
		})
	}
}

// offline_restart (ours, beyond upstream; see
// docs/concepts/disconnected-clients.md, "Offline reboot") is on by default
// for every group with a lost window, in either spelling, off for groups
// without one whatever it says, and off where the group opts out.
func TestTaskGroup_OfflineRestart(t *testing.T) {
	cases := []struct {
		name   string
		tg     *structs.TaskGroup
		expect bool
	}{
		{"nil group", nil, false},
		{"no window", &structs.TaskGroup{}, false},
		{"no window, asked for", &structs.TaskGroup{Disconnect: &structs.DisconnectStrategy{OfflineRestart: ptr(true)}}, false},
		{"legacy window", &structs.TaskGroup{MaxClientDisconnect: ptr(time.Hour)}, true},
		{"block window", &structs.TaskGroup{Disconnect: &structs.DisconnectStrategy{LostAfter: time.Hour}}, true},
		{"opted out", &structs.TaskGroup{Disconnect: &structs.DisconnectStrategy{LostAfter: time.Hour, OfflineRestart: ptr(false)}}, false},
		{"legacy window, opted out", &structs.TaskGroup{
			MaxClientDisconnect: ptr(time.Hour), Disconnect: &structs.DisconnectStrategy{OfflineRestart: ptr(false)},
		}, false},
	}
	for _, tc := range cases {
		must.Eq(t, tc.expect, tc.tg.OfflineRestart(), must.Sprint(tc.name))
	}
	d := &structs.DisconnectStrategy{OfflineRestart: ptr(false)}
	c := d.Copy()
	*c.OfflineRestart = true
	must.False(t, *d.OfflineRestart, must.Sprint("Copy shares nothing"))
}

// Each reconcile strategy is accepted, and the error for a wrong one names
// all four so the user does not have to look them up.
func TestJob_Validate_ReconcileOptions(t *testing.T) {
	for _, opt := range append([]string{""}, structs.ReconcileOptions...) {
		job := mock.Job()
		job.TaskGroups[0].Disconnect = &structs.DisconnectStrategy{LostAfter: time.Hour, Reconcile: opt}
		must.NoError(t, job.Validate(), must.Sprintf("reconcile %q", opt))
	}

	job := mock.Job()
	job.TaskGroups[0].Disconnect = &structs.DisconnectStrategy{Reconcile: "oldest"}
	err := job.Validate()
	must.Error(t, err)
	for _, opt := range structs.ReconcileOptions {
		must.StrContains(t, err.Error(), opt)
	}
	must.True(t, strings.Contains(err.Error(), "web"), must.Sprint("the error names the group"))
}

// A client cut off and restarted may bring an allocation's dead tasks back
// only while its effective window runs: the group's own, or the node
// pool's when the group sets none; a group's offline_restart = false
// always wins.
func TestAllocation_OfflineRestart(t *testing.T) {
	hour := time.Hour
	off := false
	pool := &structs.PoolDisconnect{Pool: "edge", Policy: &structs.NodePoolDisconnect{LostAfter: hour}}
	cases := []struct {
		name  string
		group *structs.DisconnectStrategy
		pool  *structs.PoolDisconnect
		want  bool
	}{
		{"no window anywhere", nil, nil, false},
		{"the group's window", &structs.DisconnectStrategy{LostAfter: hour}, nil, true},
		{"the pool's window", nil, pool, true},
		{"opted out", &structs.DisconnectStrategy{LostAfter: hour, OfflineRestart: &off}, nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			job := &structs.Job{ID: "j", TaskGroups: []*structs.TaskGroup{{Name: "g", Disconnect: c.group}}}
			a := &structs.Allocation{Job: job, TaskGroup: "g", PoolDisconnect: c.pool}
			must.Eq(t, c.want, a.OfflineRestart())
		})
	}
}

// The migrate block is accepted for what a drain honours (max_parallel, a
// health check judged on task states) and refuses by name the timings a
// drain would ignore; upstream's defaults, which the official client fills
// in, pass.
func TestMigrateStrategy_Validate(t *testing.T) {
	job := mock.Job()
	job.TaskGroups[0].Migrate = &structs.MigrateStrategy{MaxParallel: 1, HealthCheck: "checks",
		MinHealthyTime: 10 * time.Second, HealthyDeadline: 5 * time.Minute}
	must.NoError(t, job.Validate())
	must.Eq(t, 1, job.TaskGroups[0].DrainMaxParallel())

	job.TaskGroups[0].Migrate = &structs.MigrateStrategy{MaxParallel: 3, MinHealthyTime: time.Minute}
	err := job.Validate()
	must.ErrorContains(t, err, "migrate: min_healthy_time 1m0s is not supported")
	must.Eq(t, 3, job.TaskGroups[0].DrainMaxParallel())

	job.TaskGroups[0].Migrate = &structs.MigrateStrategy{HealthCheck: "manual"}
	must.ErrorContains(t, job.Validate(), `migrate: health_check must be "checks" or "task_states"`)
}
