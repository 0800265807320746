package client

import (
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoenig/test/must"
	"pgregory.net/rapid"

	"github.com/nomad-edge/nomad/testutil/fault"

	"github.com/nomad-edge/nomad/client/clienttest"
	"github.com/nomad-edge/nomad/client/state"
	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/mock"
	"github.com/nomad-edge/nomad/helper/clock"
	"github.com/nomad-edge/nomad/helper/clock/clocktest"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// TestTimeAlone checks the clock rules of "Offline reboot"
// (docs/concepts/disconnected-clients.md): within one boot the boot clock
// measures the time since the last heartbeat, whatever the wall clock did;
// after a reboot the wall clock does; a wall clock behind the heartbeat,
// or no heartbeat at all, leaves the time unknown, so that nothing is
// restarted on a guess.
func TestTimeAlone(t *testing.T) {
	wall := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	hb := state.Heartbeat{Wall: wall, BootID: "b1", SinceBoot: time.Hour}
	cases := []struct {
		name   string
		hb     state.Heartbeat
		now    time.Time
		boot   clock.BootReading
		bootOK bool
		want   aloneFor
	}{
		{"same boot: boot clock, wall clock stepped ahead", hb, wall.Add(5 * time.Hour),
			clock.BootReading{BootID: "b1", SinceBoot: time.Hour + 2*time.Minute}, true,
			aloneFor{d: 2 * time.Minute, known: true, on: measuredOnBootClock}},
		{"same boot: boot clock, wall clock stepped back", hb, wall.Add(-time.Hour),
			clock.BootReading{BootID: "b1", SinceBoot: time.Hour + 3*time.Minute}, true,
			aloneFor{d: 3 * time.Minute, known: true, on: measuredOnBootClock}},
		{"rebooted: wall clock", hb, wall.Add(7 * time.Minute),
			clock.BootReading{BootID: "b2", SinceBoot: time.Minute}, true,
			aloneFor{d: 7 * time.Minute, known: true, on: measuredOnWallClock}},
		{"no boot clock here: wall clock", hb, wall.Add(4 * time.Minute),
			clock.BootReading{}, false,
			aloneFor{d: 4 * time.Minute, known: true, on: measuredOnWallClock}},
		{"heartbeat recorded without a boot clock: wall clock", state.Heartbeat{Wall: wall}, wall.Add(time.Minute),
			clock.BootReading{BootID: "b1", SinceBoot: 2 * time.Hour}, true,
			aloneFor{d: time.Minute, known: true, on: measuredOnWallClock}},
		{"rebooted, wall clock behind the heartbeat: unknown", hb, wall.Add(-time.Minute),
			clock.BootReading{BootID: "b2", SinceBoot: time.Minute}, true,
			aloneFor{on: "wall clock is behind the last heartbeat"}},
		{"no heartbeat: unknown", state.Heartbeat{}, wall,
			clock.BootReading{BootID: "b1", SinceBoot: time.Hour}, true,
			aloneFor{on: "no heartbeat recorded"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			must.Eq(t, tc.want, timeAlone(tc.hb, tc.now, tc.boot, tc.bootOK))
		})
	}
}

// TestTimeAlone_Properties checks the invariants behind the clock rules for
// any readings: a known time alone is never negative (a negative one would
// lengthen the window); within one boot whose clock moved forward the
// answer does not depend on the wall clock at all; and a different boot is
// always measured on the wall clock.
func TestTimeAlone_Properties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		hb := state.Heartbeat{
			Wall:      base.Add(time.Duration(rapid.Int64Range(0, int64(1000*time.Hour)).Draw(rt, "hbWall"))),
			BootID:    rapid.SampledFrom([]string{"", "b1", "b2"}).Draw(rt, "hbBoot"),
			SinceBoot: time.Duration(rapid.Int64Range(0, int64(1000*time.Hour)).Draw(rt, "hbSince")),
		}
		now := base.Add(time.Duration(rapid.Int64Range(0, int64(2000*time.Hour)).Draw(rt, "now")))
		boot := clock.BootReading{
			BootID:    rapid.SampledFrom([]string{"b1", "b2"}).Draw(rt, "boot"),
			SinceBoot: time.Duration(rapid.Int64Range(0, int64(2000*time.Hour)).Draw(rt, "since")),
		}
		ok := rapid.Bool().Draw(rt, "bootOK")
		got := timeAlone(hb, now, boot, ok)
		if got.known && got.d < 0 {
			rt.Fatalf("negative time alone %v", got.d)
		}
		sameBoot := ok && hb.BootID != "" && hb.BootID == boot.BootID && boot.SinceBoot >= hb.SinceBoot
		if sameBoot {
			other := timeAlone(hb, now.Add(7*time.Hour), boot, ok)
			if got != other || got.on != measuredOnBootClock {
				rt.Fatalf("within a boot the wall clock changed the answer: %+v vs %+v", got, other)
			}
		}
		if ok && hb.BootID != "" && hb.BootID != boot.BootID && got.known && got.on != measuredOnWallClock {
			rt.Fatalf("another boot measured on %q", got.on)
		}
	})
}

// deadTasksDriver is the mock driver after a power cut: every task it is
// asked to re-attach to has died with the machine.
type deadTasksDriver struct{ drivers.Driver }

func (deadTasksDriver) RecoverTask(h *drivers.TaskHandle) error {
	return fmt.Errorf("%w: the machine lost power", drivers.ErrTaskNotFound)
}

// powerCutDrivers is the catalog of a client restarted after a power cut.
func powerCutDrivers(t *testing.T) *drivers.Catalog {
	c := drivers.NewCatalog()
	must.NoError(t, c.Register(mock.Name, func(o drivers.Options) (drivers.Driver, error) {
		d, err := mock.Factory(o)
		return deadTasksDriver{d}, err
	}))
	return c
}

// windowAlloc returns a forever-running allocation of a group with a lost
// window; offline, when set, is its disconnect.offline_restart.
func windowAlloc(nodeID string, window time.Duration, offline *bool) *structs.Allocation {
	a := clienttest.MockAlloc(nodeID, map[string]any{"run_for": "0s"})
	a.Job.TaskGroups[0].Disconnect = &structs.DisconnectStrategy{LostAfter: window, OfflineRestart: offline}
	return a
}

// offlineScenario is a client that ran allocs, was cut off from srv, and
// went down; restart brings up its successor still cut off, after
// powerOff, with every task dead.
type offlineScenario struct {
	srv  *clienttest.FakeServer
	db   *state.MemDB
	boot *clocktest.Boot
	hb   state.Heartbeat // the last heartbeat the first client persisted
}

func runThenCut(t *testing.T, allocs func(nodeID string) []*structs.Allocation, alone time.Duration) (*offlineScenario, []*structs.Allocation) {
	s := &offlineScenario{srv: clienttest.NewFakeServer(), db: state.NewMemDB(), boot: clocktest.NewBoot(clock.Real(), "boot-1")}
	t.Cleanup(s.srv.Close)
	c1 := newTestClient(t, s.srv, testClientOpts{db: s.db, boot: s.boot})
	waitReady(t, c1)
	list := allocs(c1.NodeID())
	s.srv.UpsertAllocs(list...)
	s.srv.WaitFor(t, time.Minute, func(v *clienttest.View) (bool, string) {
		return v.AllocsWithStatus(clienttest.AllocIDs(list), structs.AllocClientStatusRunning)
	})
	s.srv.Cut(fault.Reset)
	time.Sleep(alone / 2)
	must.NoError(t, c1.Shutdown()) // the power cut: the agent stops, its tasks die
	var err error
	s.hb, err = s.db.GetHeartbeat()
	must.NoError(t, err)
	must.Eq(t, "boot-1", s.hb.BootID)
	time.Sleep(alone - time.Since(s.hb.Wall)) // the power stays off
	return s, list
}

func (s *offlineScenario) restart(t *testing.T) *Client {
	c := newTestClient(t, s.srv, testClientOpts{db: s.db, boot: s.boot, drivers: powerCutDrivers(t)})
	t.Cleanup(func() { _ = c.Destroy() })
	return c
}

// TestClient_OfflineRebootRestartsWindowedGroups checks "Offline reboot"
// (docs/concepts/disconnected-clients.md), the edge device whose power
// and LTE came back while its servers stay unreachable: the task of a group
// with a disconnect window, which died with the agent, runs again within
// its restart delay, says so in a `Restarted while disconnected` event, and
// is stopped when the window has run out since the last heartbeat, not a
// moment before, because by then the servers have replaced it. A group
// without a window, and one that opted out, wait for the servers as
// upstream does. On heal the servers get the true times, and decide for
// the allocations that waited: one they stopped never starts again, one
// they kept starts.
func TestClient_OfflineRebootRestartsWindowedGroups(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		window := 10 * time.Minute
		var windowed, noWindow, optOut *structs.Allocation
		s, _ := runThenCut(t, func(nodeID string) []*structs.Allocation {
			windowed = windowAlloc(nodeID, window, nil)
			noWindow = clienttest.MockAlloc(nodeID, map[string]any{"run_for": "0s"})
			optOut = windowAlloc(nodeID, window, new(false))
			return []*structs.Allocation{windowed, noWindow, optOut}
		}, 2*time.Minute)

		c := s.restart(t)
		restartedAt := time.Now()
		expiry := s.hb.Wall.Add(window)
		// The restart delay is 1s plus up to a quarter of jitter.
		time.Sleep(1250 * time.Millisecond)
		synctest.Wait()
		got := localAlloc(t, c, windowed.ID)
		ts := got.TaskStates["web"]
		must.Eq(t, structs.AllocClientStatusRunning, got.ClientStatus, must.Sprint(clienttest.DescribeAlloc(got)))
		must.Eq(t, 1, int(ts.Restarts))
		e := clienttest.LastEvent(ts, structs.TaskRestartedOffline)
		must.NotNil(t, e, must.Sprint(clienttest.DescribeAlloc(got)))
		must.StrContains(t, e.DisplayMessage, "disconnect window")
		restartTime := time.Unix(0, e.Time)
		must.True(t, !restartTime.Before(restartedAt.Add(time.Second)), must.Sprintf("restarted at %s", restartTime))
		for _, a := range []*structs.Allocation{noWindow, optOut} {
			got := localAlloc(t, c, a.ID)
			must.NotEq(t, structs.TaskStateRunning, got.TaskStates["web"].State, must.Sprint(clienttest.DescribeAlloc(got)))
			must.Nil(t, clienttest.LastEvent(got.TaskStates["web"], structs.TaskRestartedOffline))
			must.Eq(t, 1, countEvents(got.TaskStates["web"], structs.TaskStarted))
		}

		time.Sleep(time.Until(expiry) - time.Second)
		synctest.Wait()
		got = localAlloc(t, c, windowed.ID)
		must.Eq(t, structs.AllocClientStatusRunning, got.ClientStatus, must.Sprint("still inside the window: ", clienttest.DescribeAlloc(got)))
		time.Sleep(2 * time.Second)
		synctest.Wait()
		got = localAlloc(t, c, windowed.ID)
		must.Eq(t, structs.AllocClientStatusComplete, got.ClientStatus, must.Sprint(clienttest.DescribeAlloc(got)))
		killed := clienttest.LastEvent(got.TaskStates["web"], structs.TaskKilling)
		must.NotNil(t, killed)
		must.StrContains(t, killed.KillReason, "disconnect window")

		// Meanwhile the servers gave up the allocation without a window
		// (lost, stopped) and kept the opted-out one.
		s.srv.StopAlloc(noWindow.ID)
		s.srv.Heal()
		s.srv.WaitFor(t, time.Minute, func(v *clienttest.View) (bool, string) {
			w, n, o := v.Alloc(windowed.ID), v.Alloc(noWindow.ID), v.Alloc(optOut.ID)
			ok := w.ClientStatus == structs.AllocClientStatusComplete &&
				n.ClientStatus == structs.AllocClientStatusComplete &&
				o.ClientStatus == structs.AllocClientStatusRunning
			return ok, strings.Join([]string{clienttest.DescribeAlloc(w), clienttest.DescribeAlloc(n), clienttest.DescribeAlloc(o)}, " | ")
		})
		srvEvent := clienttest.LastEvent(s.srv.Alloc(windowed.ID).TaskStates["web"], structs.TaskRestartedOffline)
		must.NotNil(t, srvEvent)
		must.Eq(t, e.Time, srvEvent.Time, must.Sprint("the servers learn the restart's true time"))
		must.Eq(t, 1, countEvents(s.srv.Alloc(noWindow.ID).TaskStates["web"], structs.TaskStarted),
			must.Sprint("the allocation the servers stopped never ran again"))
		must.Nil(t, clienttest.LastEvent(s.srv.Alloc(optOut.ID).TaskStates["web"], structs.TaskRestartedOffline))
	})
}

// TestClient_OfflineRebootHealInsideWindow checks that an allocation the
// client restarted on its own is the servers' to decide once they answer:
// healed inside the window it keeps running (the servers resume it like any
// reconnect), and the end of the window no longer stops it.
func TestClient_OfflineRebootHealInsideWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		window := 10 * time.Minute
		var a *structs.Allocation
		s, _ := runThenCut(t, func(nodeID string) []*structs.Allocation {
			a = windowAlloc(nodeID, window, nil)
			return []*structs.Allocation{a}
		}, time.Minute)
		c := s.restart(t)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		must.Eq(t, structs.AllocClientStatusRunning, localAlloc(t, c, a.ID).ClientStatus)

		s.srv.MarkUnknown(a.ID)
		s.srv.Heal()
		s.srv.WaitFor(t, time.Minute, func(v *clienttest.View) (bool, string) {
			got := v.Alloc(a.ID)
			return got.ClientStatus == structs.AllocClientStatusRunning &&
				clienttest.LastEvent(got.TaskStates["web"], structs.TaskRestartedOffline) != nil, clienttest.DescribeAlloc(got)
		})
		time.Sleep(window)
		synctest.Wait()
		got := localAlloc(t, c, a.ID)
		must.Eq(t, structs.AllocClientStatusRunning, got.ClientStatus, must.Sprint(clienttest.DescribeAlloc(got)))
		must.Eq(t, 1, int(got.TaskStates["web"].Restarts))
	})
}

// TestClient_OfflineRebootWindowAlreadyOver checks that a client that comes
// back after its window has run out restarts nothing on its own: the
// servers have replaced the allocation by then. It waits for them, and
// starts the task only if they still want it.
func TestClient_OfflineRebootWindowAlreadyOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var a *structs.Allocation
		s, _ := runThenCut(t, func(nodeID string) []*structs.Allocation {
			a = windowAlloc(nodeID, 5*time.Minute, nil)
			return []*structs.Allocation{a}
		}, 6*time.Minute)
		c := s.restart(t)
		time.Sleep(time.Minute)
		synctest.Wait()
		got := localAlloc(t, c, a.ID)
		must.NotEq(t, structs.TaskStateRunning, got.TaskStates["web"].State, must.Sprint(clienttest.DescribeAlloc(got)))
		must.Nil(t, clienttest.LastEvent(got.TaskStates["web"], structs.TaskRestartedOffline))

		s.srv.Heal()
		s.srv.WaitFor(t, time.Minute, func(v *clienttest.View) (bool, string) {
			got := v.Alloc(a.ID)
			return got.ClientStatus == structs.AllocClientStatusRunning && countEvents(got.TaskStates["web"], structs.TaskStarted) == 2,
				clienttest.DescribeAlloc(got)
		})
	})
}

// TestClient_OfflineRebootClockAcrossReboot checks which clock decides: the
// first client's last heartbeat is rewritten as if the wall clock had been
// stepped an hour ahead since (an NTP correction). In the same boot the
// boot clock still says two minutes, inside the window, so the task is
// restarted; after a reboot only the wall clock can say, an hour is past
// the window, and the task waits for the servers.
func TestClient_OfflineRebootClockAcrossReboot(t *testing.T) {
	for _, tc := range []struct {
		name     string
		reboot   bool
		restarts bool
	}{
		{"same boot: boot clock", false, true},
		{"rebooted: wall clock", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var a *structs.Allocation
				s, _ := runThenCut(t, func(nodeID string) []*structs.Allocation {
					a = windowAlloc(nodeID, 10*time.Minute, nil)
					return []*structs.Allocation{a}
				}, 2*time.Minute)
				hb := s.hb
				hb.Wall = hb.Wall.Add(-time.Hour)
				must.NoError(t, s.db.PutHeartbeat(hb))
				if tc.reboot {
					s.boot.Reboot("boot-2")
				}
				c := s.restart(t)
				time.Sleep(2 * time.Second)
				synctest.Wait()
				got := localAlloc(t, c, a.ID)
				restarted := clienttest.LastEvent(got.TaskStates["web"], structs.TaskRestartedOffline) != nil
				must.Eq(t, tc.restarts, restarted, must.Sprint(clienttest.DescribeAlloc(got)))
				must.Eq(t, tc.restarts, got.TaskStates["web"].State == structs.TaskStateRunning)
			})
		})
	}
}

// TestClient_OfflineRebootNeverStartedWaits checks that an allocation none
// of whose tasks ever started is not started by a client restarted while
// cut off, even in a group with a window: the servers mark such an
// allocation lost, not unknown, and replace it at once, so starting it
// would make a second copy.
func TestClient_OfflineRebootNeverStartedWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := clienttest.NewFakeServer()
		defer srv.Close()
		srv.Cut(fault.Reset)
		db := state.NewMemDB()
		boot := clocktest.NewBoot(clock.Real(), "boot-1")
		must.NoError(t, db.PutNodeIdentity(state.NodeIdentity{NodeID: structs.GenerateUUID(), SecretID: structs.GenerateUUID()}))
		id, err := db.GetNodeIdentity()
		must.NoError(t, err)
		a := windowAlloc(id.NodeID, time.Hour, nil)
		must.NoError(t, db.PutAllocations(a))
		must.NoError(t, db.PutTaskState(a.ID, "web", &structs.TaskState{State: structs.TaskStatePending}))
		r, _ := boot.ReadBoot()
		must.NoError(t, db.PutHeartbeat(state.Heartbeat{Wall: time.Now(), BootID: r.BootID, SinceBoot: r.SinceBoot}))
		time.Sleep(time.Minute)

		c := newTestClient(t, srv, testClientOpts{db: db, boot: boot, drivers: powerCutDrivers(t)})
		defer c.Destroy()
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		got := localAlloc(t, c, a.ID)
		must.Eq(t, 0, countEvents(got.TaskStates["web"], structs.TaskStarted), must.Sprint(clienttest.DescribeAlloc(got)))
	})
}
