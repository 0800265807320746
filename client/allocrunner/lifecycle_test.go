package allocrunner

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/clienttest"
	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// lcTask is a task added beside an allocation's main task "web".
type lcTask struct {
	name    string
	hook    string
	sidecar bool
	cfg     map[string]any
}

// lifecycleAlloc returns a mock allocation whose main task "web" runs with
// main's mock config, beside the given lifecycle tasks.
func lifecycleAlloc(main map[string]any, extra ...lcTask) *structs.Allocation {
	a := clienttest.MockAlloc("node-1", main)
	tg := a.Job.TaskGroups[0]
	for _, x := range extra {
		t := tg.Tasks[0].Copy()
		t.Name, t.Config = x.name, x.cfg
		t.Lifecycle = &structs.TaskLifecycleConfig{Hook: x.hook, Sidecar: x.sidecar}
		tg.Tasks = append(tg.Tasks, t)
	}
	a.AllocatedResources = structs.NewAllocatedResources(tg)
	return a
}

// eventAt returns the time of the task's first event of type typ, failing
// when there is none.
func eventAt(t *testing.T, ts *structs.TaskState, typ string) time.Time {
	t.Helper()
	for _, e := range ts.Events {
		if e.Type == typ {
			return time.Unix(0, e.Time)
		}
	}
	t.Fatalf("no %q event in %v", typ, eventTypesOf(ts))
	return time.Time{}
}

// An ephemeral prestart task runs to completion before the main task
// starts, and, having exited successfully, is not restarted even in a
// service job: an init task (a schema migration, a volume's preparation)
// must run once, and first.
func TestAllocRunner_PrestartCompletesBeforeMain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		a := lifecycleAlloc(map[string]any{"run_for": "0s"},
			lcTask{name: "init", hook: structs.TaskLifecycleHookPrestart, cfg: map[string]any{"run_for": "10s"}})
		ar := h.runner(t, a)
		start := time.Now()
		go ar.Run()
		defer ar.Destroy()

		got := h.rec.waitFor(t, a.ID, func(a *structs.Allocation) bool {
			return a.TaskStates["web"].State == structs.TaskStateRunning
		})
		must.Eq(t, structs.AllocClientStatusRunning, got.ClientStatus)
		init := got.TaskStates["init"]
		must.Eq(t, structs.TaskStateDead, init.State)
		must.False(t, init.Failed)
		must.Eq(t, 0, init.Restarts)
		must.Eq(t, start.Add(10*time.Second), eventAt(t, got.TaskStates["web"], structs.TaskStarted))

		time.Sleep(time.Hour) // fake time: nothing starts init again
		synctest.Wait()
		init = ar.Alloc().TaskStates["init"]
		must.Eq(t, 1, countType(init.Events, structs.TaskStarted))
		must.Eq(t, structs.AllocClientStatusRunning, ar.Alloc().ClientStatus)
	})
}

// A prestart sidecar must be running, not finished, before the main task
// starts: the main task may depend on it (a proxy, a local cache).
func TestAllocRunner_PrestartSidecarRunsBeforeMain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		a := lifecycleAlloc(map[string]any{"run_for": "0s"},
			lcTask{name: "proxy", hook: structs.TaskLifecycleHookPrestart, sidecar: true,
				cfg: map[string]any{"run_for": "0s", "start_block_for": "5s"}})
		ar := h.runner(t, a)
		start := time.Now()
		go ar.Run()
		defer ar.Destroy()

		got := h.rec.waitFor(t, a.ID, func(a *structs.Allocation) bool {
			return a.TaskStates["web"].State == structs.TaskStateRunning
		})
		must.Eq(t, structs.TaskStateRunning, got.TaskStates["proxy"].State)
		must.Eq(t, start.Add(5*time.Second), eventAt(t, got.TaskStates["proxy"], structs.TaskStarted))
		must.Eq(t, start.Add(5*time.Second), eventAt(t, got.TaskStates["web"], structs.TaskStarted))
	})
}

// A prestart task that keeps failing past its restart policy fails the
// allocation, and the main task never starts: it is killed where it
// waited, with the failed sibling named.
func TestAllocRunner_FailedPrestartFailsAllocation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		a := lifecycleAlloc(map[string]any{"run_for": "0s"},
			lcTask{name: "init", hook: structs.TaskLifecycleHookPrestart, cfg: map[string]any{"run_for": "1s", "exit_code": 3}})
		ar := h.runner(t, a)
		go ar.Run()
		defer ar.Destroy()

		h.rec.waitStatus(t, a.ID, structs.AllocClientStatusFailed)
		<-ar.WaitCh()
		got := ar.Alloc()
		init := got.TaskStates["init"]
		must.True(t, init.Failed)
		must.Eq(t, 2, init.Restarts) // the policy's two attempts
		must.Eq(t, 3, countType(init.Events, structs.TaskStarted))
		web := got.TaskStates["web"]
		must.Eq(t, structs.TaskStateDead, web.State)
		must.Eq(t, 0, countType(web.Events, structs.TaskStarted))
		must.SliceContains(t, eventTypesOf(web), structs.TaskSiblingFailed)
		must.Eq(t, structs.AllocClientStatusFailed, got.ClientStatus)
	})
}

// A poststart task starts only once the main task is running.
func TestAllocRunner_PoststartAfterMainRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		a := lifecycleAlloc(map[string]any{"run_for": "0s", "start_block_for": "3s"},
			lcTask{name: "announce", hook: structs.TaskLifecycleHookPoststart, cfg: map[string]any{"run_for": "1s"}})
		ar := h.runner(t, a)
		start := time.Now()
		go ar.Run()
		defer ar.Destroy()

		got := h.rec.waitFor(t, a.ID, func(a *structs.Allocation) bool {
			return a.TaskStates["announce"].State == structs.TaskStateDead
		})
		must.Eq(t, start.Add(3*time.Second), eventAt(t, got.TaskStates["web"], structs.TaskStarted))
		must.Eq(t, start.Add(3*time.Second), eventAt(t, got.TaskStates["announce"], structs.TaskStarted))
		must.False(t, got.TaskStates["announce"].Failed)
		must.Eq(t, structs.AllocClientStatusRunning, got.ClientStatus)
	})
}

// A poststop task waits (the allocation reports running meanwhile, not
// pending) and runs once the main task is dead after a server stop; the
// allocation completes when it does.
func TestAllocRunner_PoststopRunsAfterStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		a := lifecycleAlloc(map[string]any{"run_for": "0s"},
			lcTask{name: "cleanup", hook: structs.TaskLifecycleHookPoststop, cfg: map[string]any{"run_for": "2s"}})
		ar := h.runner(t, a)
		go ar.Run()
		defer ar.Destroy()

		h.rec.waitStatus(t, a.ID, structs.AllocClientStatusRunning)
		time.Sleep(time.Minute)
		synctest.Wait()
		got := ar.Alloc()
		must.Eq(t, structs.AllocClientStatusRunning, got.ClientStatus)
		must.Eq(t, []string{structs.TaskReceived}, eventTypesOf(got.TaskStates["cleanup"]))

		stopped := a.Copy()
		stopped.DesiredStatus = structs.AllocDesiredStatusStop
		ar.Update(stopped)
		got = h.rec.waitStatus(t, a.ID, structs.AllocClientStatusComplete)
		cleanup := got.TaskStates["cleanup"]
		must.Eq(t, structs.TaskStateDead, cleanup.State)
		must.False(t, cleanup.Failed)
		killed := eventAt(t, got.TaskStates["web"], structs.TaskKilled)
		started := eventAt(t, cleanup, structs.TaskStarted)
		must.False(t, started.Before(killed), must.Sprint("poststop started before the main task was killed"))
		must.Eq(t, started.Add(2*time.Second), eventAt(t, cleanup, structs.TaskTerminated))
	})
}

// A sidecar is restarted when it exits, even successfully and in a batch
// job, and is killed once the main task has completed; the allocation is
// complete, not failed.
func TestAllocRunner_SidecarRestartedThenKilledWhenMainEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		a := lifecycleAlloc(map[string]any{"run_for": "10s"},
			lcTask{name: "shipper", hook: structs.TaskLifecycleHookPoststart, sidecar: true, cfg: map[string]any{"run_for": "4s"}})
		a.Job.Type = structs.JobTypeBatch
		ar := h.runner(t, a)
		go ar.Run()
		defer ar.Destroy()

		h.rec.waitStatus(t, a.ID, structs.AllocClientStatusComplete)
		<-ar.WaitCh()
		got := ar.Alloc()
		shipper := got.TaskStates["shipper"]
		must.Eq(t, structs.TaskStateDead, shipper.State)
		must.False(t, shipper.Failed)
		must.Eq(t, 2, shipper.Restarts) // exits at 4s and ~9s, within the policy's 2
		must.SliceContains(t, eventTypesOf(shipper), structs.TaskMainDead)
		must.SliceContains(t, eventTypesOf(shipper), structs.TaskKilled)
		must.False(t, got.TaskStates["web"].Failed)
	})
}

// The kill order of a stop: the leader first, then the other tasks, then
// the sidecars, which serve them to the end.
func TestAllocRunner_StopKillsSidecarsLast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		a := lifecycleAlloc(map[string]any{"run_for": "0s", "kill_after": "3s"},
			lcTask{name: "proxy", hook: structs.TaskLifecycleHookPrestart, sidecar: true, cfg: map[string]any{"run_for": "0s"}})
		a.Job.TaskGroups[0].Tasks[0].KillTimeout = 10 * time.Second
		ar := h.runner(t, a)
		go ar.Run()
		defer ar.Destroy()
		h.rec.waitFor(t, a.ID, func(a *structs.Allocation) bool {
			return a.TaskStates["web"].State == structs.TaskStateRunning
		})

		stopped := a.Copy()
		stopped.DesiredStatus = structs.AllocDesiredStatusStop
		ar.Update(stopped)
		got := h.rec.waitStatus(t, a.ID, structs.AllocClientStatusComplete)
		webKilled := eventAt(t, got.TaskStates["web"], structs.TaskKilled)
		proxyKilling := eventAt(t, got.TaskStates["proxy"], structs.TaskKilling)
		must.False(t, proxyKilling.Before(webKilled), must.Sprint("the sidecar was killed before the main task was dead"))
	})
}

// A restored allocation whose prestart task completed before the client
// stopped does not run it again, and neither does one whose client
// stopped between recording the exit and deciding on it: "across a
// restart nothing runs twice" (docs/concepts/disconnected-clients.md).
func TestAllocRunner_RestoreDoesNotRerunCompletedPrestart(t *testing.T) {
	for _, undecided := range []bool{false, true} {
		name := map[bool]string{false: "completed", true: "exit recorded, no decision"}[undecided]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t)
				a := lifecycleAlloc(map[string]any{"run_for": "0s"},
					lcTask{name: "init", hook: structs.TaskLifecycleHookPrestart, cfg: map[string]any{"run_for": "1s"}})
				ar := h.runner(t, a)
				go ar.Run()
				h.rec.waitFor(t, a.ID, func(a *structs.Allocation) bool {
					return a.TaskStates["web"].State == structs.TaskStateRunning
				})
				ar.Shutdown()

				recs, _, err := h.db.GetAllocations()
				must.NoError(t, err)
				if undecided {
					// Roll init's record back to just after its exit.
					st := recs[0].Tasks["init"].State
					st.State, st.FinishedAt = structs.TaskStateRunning, time.Time{}
					for st.Events[len(st.Events)-1].Type != structs.TaskTerminated {
						st.Events = st.Events[:len(st.Events)-1]
					}
				}
				ar2, err := NewAllocRunner(Config{
					Alloc: recs[0].Alloc, AllocDirRoot: h.root, StateDB: h.db, Drivers: h.drivers, StateUpdater: h.rec,
				})
				must.NoError(t, err)
				ar2.Restore(recs[0].Tasks)
				go ar2.Run()
				defer ar2.Destroy()
				time.Sleep(time.Hour)
				synctest.Wait()
				got := ar2.Alloc()
				must.Eq(t, structs.AllocClientStatusRunning, got.ClientStatus)
				init := got.TaskStates["init"]
				must.Eq(t, structs.TaskStateDead, init.State)
				must.Eq(t, 1, countType(init.Events, structs.TaskStarted))
				_, err = h.drivers[mock.Name].InspectTask(a.ID + "/init")
				must.ErrorIs(t, err, drivers.ErrTaskNotFound)
				must.Eq(t, 1, countType(got.TaskStates["web"].Events, structs.TaskStarted))
			})
		})
	}
}

// A reconnecting allocation (the servers marked it unknown while the
// client was cut off) gets its Reconnected events and nothing else: its
// completed prestart task does not run again, its main task is not
// restarted.
func TestAllocRunner_ReconnectDoesNotRerunPrestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		a := lifecycleAlloc(map[string]any{"run_for": "0s"},
			lcTask{name: "init", hook: structs.TaskLifecycleHookPrestart, cfg: map[string]any{"run_for": "1s"}},
			lcTask{name: "proxy", hook: structs.TaskLifecycleHookPrestart, sidecar: true, cfg: map[string]any{"run_for": "0s"}})
		ar := h.runner(t, a)
		go ar.Run()
		defer ar.Destroy()
		h.rec.waitFor(t, a.ID, func(a *structs.Allocation) bool {
			return a.TaskStates["web"].State == structs.TaskStateRunning
		})

		time.Sleep(10 * time.Minute) // fake time: cut off
		unknown := a.Copy()
		unknown.AppendState(structs.AllocStateFieldClientStatus, structs.AllocClientStatusUnknown, time.Now())
		unknown.ClientStatus = structs.AllocClientStatusUnknown
		unknown.AllocModifyIndex++
		ar.Update(unknown)
		h.rec.waitFor(t, a.ID, func(a *structs.Allocation) bool {
			return countType(a.TaskStates["web"].Events, structs.TaskClientReconnected) == 1
		})
		time.Sleep(time.Hour)
		synctest.Wait()
		got := ar.Alloc()
		must.Eq(t, structs.AllocClientStatusRunning, got.ClientStatus)
		for _, name := range []string{"init", "proxy", "web"} {
			ts := got.TaskStates[name]
			must.Eq(t, 1, countType(ts.Events, structs.TaskStarted), must.Sprint(name))
			must.Eq(t, 0, ts.Restarts, must.Sprint(name))
			must.Eq(t, 1, countType(ts.Events, structs.TaskClientReconnected), must.Sprint(name))
		}
	})
}

// A successful exit ends an ephemeral lifecycle task and a poststop task
// in any job, and restarts a sidecar in any job; main tasks keep the job
// type's rule (upstream's).
func TestRestartTracker_LifecycleOnSuccess(t *testing.T) {
	p := structs.RestartPolicy{Attempts: 2, Interval: time.Minute, Delay: time.Second, Mode: structs.RestartPolicyModeFail}
	lc := func(hook string, sidecar bool) *structs.TaskLifecycleConfig {
		return &structs.TaskLifecycleConfig{Hook: hook, Sidecar: sidecar}
	}
	cases := []struct {
		name      string
		jobType   string
		lifecycle *structs.TaskLifecycleConfig
		want      string
	}{
		{"service main", structs.JobTypeService, nil, structs.TaskRestarting},
		{"batch main", structs.JobTypeBatch, nil, structs.TaskTerminated},
		{"service prestart", structs.JobTypeService, lc(structs.TaskLifecycleHookPrestart, false), structs.TaskTerminated},
		{"service poststart", structs.JobTypeService, lc(structs.TaskLifecycleHookPoststart, false), structs.TaskTerminated},
		{"batch prestart sidecar", structs.JobTypeBatch, lc(structs.TaskLifecycleHookPrestart, true), structs.TaskRestarting},
		{"batch poststart sidecar", structs.JobTypeBatch, lc(structs.TaskLifecycleHookPoststart, true), structs.TaskRestarting},
		{"service poststop sidecar", structs.JobTypeService, lc(structs.TaskLifecycleHookPoststop, true), structs.TaskTerminated},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRestartTracker(&p, tc.jobType, tc.lifecycle)
			must.Eq(t, tc.want, r.OnExit(&drivers.ExitResult{}, t0).EventType)
			// A failure is a failure whatever the lifecycle.
			must.Eq(t, structs.TaskRestarting, r.OnExit(failed, t0).EventType)
		})
	}
}

// A client shutting down while a stop waits for the main task to die
// leaves the sidecar running: the main task's runner returned because of
// the shutdown, not because the task died, and the next client finishes
// the stop.
func TestAllocRunner_ShutdownDuringStopLeavesSidecar(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		a := lifecycleAlloc(map[string]any{"run_for": "0s"},
			lcTask{name: "proxy", hook: structs.TaskLifecycleHookPrestart, sidecar: true, cfg: map[string]any{"run_for": "0s"}})
		a.Job.TaskGroups[0].Tasks[0].ShutdownDelay = time.Hour
		ar := h.runner(t, a)
		go ar.Run()
		h.rec.waitFor(t, a.ID, func(a *structs.Allocation) bool {
			return a.TaskStates["web"].State == structs.TaskStateRunning
		})

		stopped := a.Copy()
		stopped.DesiredStatus = structs.AllocDesiredStatusStop
		ar.Update(stopped)
		time.Sleep(time.Minute) // fake time: the main task waits out its delay
		ar.Shutdown()
		synctest.Wait()
		st, err := h.drivers[mock.Name].InspectTask(a.ID + "/proxy")
		must.NoError(t, err)
		must.Eq(t, drivers.TaskStateRunning, st.State)
		must.SliceNotContains(t, eventTypesOf(ar.Alloc().TaskStates["proxy"]), structs.TaskKilling)
	})
}

// A leader's death kills the sidecars (Leader Task Dead) but not the
// poststop task, which runs afterwards: the leader rule and the lifecycle
// order compose as upstream's.
func TestAllocRunner_LeaderDeathThenPoststop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		a := lifecycleAlloc(map[string]any{"run_for": "5s"},
			lcTask{name: "proxy", hook: structs.TaskLifecycleHookPrestart, sidecar: true, cfg: map[string]any{"run_for": "0s"}},
			lcTask{name: "cleanup", hook: structs.TaskLifecycleHookPoststop, cfg: map[string]any{"run_for": "1s"}})
		a.Job.Type = structs.JobTypeBatch
		a.Job.TaskGroups[0].Tasks[0].Leader = true
		ar := h.runner(t, a)
		go ar.Run()
		defer ar.Destroy()

		h.rec.waitStatus(t, a.ID, structs.AllocClientStatusComplete)
		<-ar.WaitCh()
		got := ar.Alloc()
		proxy, cleanup := got.TaskStates["proxy"], got.TaskStates["cleanup"]
		must.SliceContains(t, eventTypesOf(proxy), structs.TaskLeaderDead)
		must.SliceNotContains(t, eventTypesOf(cleanup), structs.TaskLeaderDead)
		must.Eq(t, 1, countType(cleanup.Events, structs.TaskStarted))
		must.False(t, eventAt(t, cleanup, structs.TaskStarted).Before(eventAt(t, proxy, structs.TaskKilled)))
		must.False(t, cleanup.Failed)
	})
}
