//go:build linux

package rawexec

import (
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/internal/cgroup"
	"github.com/nomad-edge/nomad/drivers/internal/drivertest"
	"github.com/nomad-edge/nomad/drivers/internal/users"
)

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: switching users and making cgroups")
	}
}

// procField returns the value of a "Key:\tvalue" line of /proc/<pid>/status.
func procField(t *testing.T, pid int, key string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	must.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			return strings.Join(strings.Fields(v), " ")
		}
	}
	t.Fatalf("no %s in /proc/%d/status", key, pid)
	return ""
}

func startSleep(t *testing.T, d *Driver, cfg *drivers.TaskConfig) taskState {
	t.Helper()
	h, err := d.StartTask(cfg)
	must.NoError(t, err)
	var st taskState
	must.NoError(t, h.GetDriverState(&st))
	return st
}

// readable lets a task run as another user reach its task dir: t.TempDir
// is private to root.
func readable(t *testing.T, cfg *drivers.TaskConfig) {
	t.Helper()
	for dir := cfg.TaskDir; dir != "/" && dir != os.TempDir(); dir = filepath.Dir(dir) {
		if _, err := os.Stat(dir); err == nil {
			must.NoError(t, os.Chmod(dir, 0o755))
		}
	}
}

// work_dir is where the command starts, instead of the task dir.
func TestStartTask_WorkDir(t *testing.T) {
	d := newTestDriver(t)
	dir := t.TempDir()
	cfg := newTaskConfig(t, "pwd")
	cfg.Config["work_dir"] = dir
	_, err := d.StartTask(cfg)
	must.NoError(t, err)
	must.True(t, waitExit(t, d, cfg.ID).Successful())
	out, err := os.ReadFile(cfg.StdoutPath)
	must.NoError(t, err)
	must.Eq(t, dir+"\n", string(out))
}

// oom_score_adj reaches the task; without it the task gets 0, not the
// agent's score (which a unit file often sets to -1000, making tasks the
// last thing the kernel would kill).
func TestStartTask_OOMScoreAdj(t *testing.T) {
	needRoot(t)
	d := newTestDriver(t)
	cfg := newTaskConfig(t, "sleep", "30")
	cfg.Config["oom_score_adj"] = 500
	st := startSleep(t, d, cfg)
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(st.Pid), "oom_score_adj"))
	must.NoError(t, err)
	must.Eq(t, "500", strings.TrimSpace(string(b)))

	// Raising one's own score needs no privilege; the task must still
	// get 0, not this.
	must.NoError(t, os.WriteFile("/proc/self/oom_score_adj", []byte("100"), 0o644))
	t.Cleanup(func() { _ = os.WriteFile("/proc/self/oom_score_adj", []byte("0"), 0o644) })
	cfg2 := newTaskConfig(t, "sleep", "30")
	cfg2.ID += "-default"
	st2 := startSleep(t, d, cfg2)
	b, err = os.ReadFile(filepath.Join("/proc", strconv.Itoa(st2.Pid), "oom_score_adj"))
	must.NoError(t, err)
	must.Eq(t, "0", strings.TrimSpace(string(b)))
}

// denied_envvars scrubs matching names from the task's environment, so a
// job can keep a variable the client sets (a token) away from a program.
func TestStartTask_DeniedEnvvars(t *testing.T) {
	d := newTestDriver(t)
	cfg := newTaskConfig(t, "env")
	cfg.Env = map[string]string{"SECRET_TOKEN": "x", "AWS_KEY": "y", "MY_PASSWORD_FILE": "z", "KEEP": "1"}
	cfg.Config["denied_envvars"] = []any{"SECRET_*", "AWS_KEY", "*PASSWORD*"}
	_, err := d.StartTask(cfg)
	must.NoError(t, err)
	must.True(t, waitExit(t, d, cfg.ID).Successful())
	out, err := os.ReadFile(cfg.StdoutPath)
	must.NoError(t, err)
	env := strings.Fields(string(out))
	must.SliceContains(t, env, "KEEP=1")
	for _, gone := range []string{"SECRET_TOKEN=x", "AWS_KEY=y", "MY_PASSWORD_FILE=z"} {
		must.SliceNotContains(t, env, gone)
	}
}

// A task with user = "nobody" runs as nobody, with nobody's groups, when
// the agent is root.
func TestStartTask_User(t *testing.T) {
	needRoot(t)
	nobody, err := users.Lookup("nobody")
	must.NoError(t, err)
	d := newTestDriver(t)
	cfg := newTaskConfig(t, "sleep", "30")
	cfg.User = "nobody"
	must.NoError(t, os.MkdirAll(cfg.TaskDir, 0o755))
	readable(t, cfg)
	st := startSleep(t, d, cfg)
	uid, gid := strconv.Itoa(nobody.UID), strconv.Itoa(nobody.GID)
	must.Eq(t, strings.Join([]string{uid, uid, uid, uid}, " "), procField(t, st.Pid, "Uid"))
	must.Eq(t, strings.Join([]string{gid, gid, gid, gid}, " "), procField(t, st.Pid, "Gid"))
}

// A task whose user cannot enter its working directory (a data_dir of mode
// 0700) is refused with the directory named, not with the fork's bare
// "permission denied".
func TestStartTask_UserCannotReachWorkDir(t *testing.T) {
	needRoot(t)
	d := newTestDriver(t)
	cfg := newTaskConfig(t, "true")
	cfg.User = "nobody"
	_, err := d.StartTask(cfg)
	must.ErrorIs(t, err, ErrWorkDirUnreachable)
	must.StrContains(t, err.Error(), cfg.TaskDir)
	must.False(t, d.tasks.Has(cfg.ID))

	cfg.Config["work_dir"] = "/"
	_, err = d.StartTask(cfg)
	must.NoError(t, err)
	must.True(t, waitExit(t, d, cfg.ID).Successful())
}

// A user whose uid or gid the plugin denies is refused before anything
// runs, and the error names the option; an unknown user is refused too.
func TestStartTask_UserDenied(t *testing.T) {
	nobody, err := users.Lookup("nobody")
	must.NoError(t, err)
	d, err := New(drivers.Options{Config: map[string]any{
		"enabled":          true,
		"denied_host_uids": "0-10," + strconv.Itoa(nobody.UID),
	}})
	must.NoError(t, err)
	cfg := newTaskConfig(t, "true")
	cfg.User = "nobody"
	_, err = d.StartTask(cfg)
	must.ErrorIs(t, err, users.ErrDenied)
	must.StrContains(t, err.Error(), "denied_host_uids")
	must.StrContains(t, err.Error(), `"nobody"`)
	must.False(t, d.tasks.Has(cfg.ID))

	d, err = New(drivers.Options{Config: map[string]any{"enabled": true, "denied_host_gids": strconv.Itoa(nobody.GID)}})
	must.NoError(t, err)
	_, err = d.StartTask(cfg)
	must.ErrorIs(t, err, users.ErrDenied)
	must.StrContains(t, err.Error(), "denied_host_gids")

	cfg.User = "no-such-user-here"
	_, err = d.StartTask(cfg)
	var unknown user.UnknownUserError
	must.ErrorAs[user.UnknownUserError](t, err, &unknown)
}

// Bad task and plugin config is refused with the key named.
func TestDecodeConfig_Refusals(t *testing.T) {
	for key, cfg := range map[string]map[string]any{
		"work_dir":       {"command": "x", "work_dir": "relative/dir"},
		"oom_score_adj":  {"command": "x", "oom_score_adj": -5},
		"denied_envvars": {"command": "x", "denied_envvars": []any{"[bad"}},
	} {
		_, err := decodeTaskConfig(cfg)
		var ce *drivers.ConfigError
		must.ErrorAs[*drivers.ConfigError](t, err, &ce, must.Sprint(key))
		must.Eq(t, key, ce.Key)
	}
	for key, cfg := range map[string]map[string]any{
		"denied_host_uids": {"denied_host_uids": "0-x"},
		"denied_host_gids": {"denied_host_gids": "10-1"},
	} {
		_, err := New(drivers.Options{Config: cfg})
		var ce *drivers.ConfigError
		must.ErrorAs[*drivers.ConfigError](t, err, &ce, must.Sprint(key))
		must.Eq(t, key, ce.Key)
	}
}

// needCgroups skips where the driver gives tasks no cgroup.
func needCgroups(t *testing.T) cgroupHost {
	t.Helper()
	needRoot(t)
	host := detectCgroupHost()
	if host.version == 0 {
		t.Skip("the host offers no cgroups")
	}
	return host
}

// A task gets a cgroup of its own, named after it, which it is in; the
// cgroup is removed when the task is destroyed.
func TestStartTask_Cgroup(t *testing.T) {
	host := needCgroups(t)
	d := newTestDriver(t)
	cfg := newTaskConfig(t, "sleep", "30")
	st := startSleep(t, d, cfg)
	must.NotNil(t, st.Cgroups)
	want := cgroup.For(host.version, cgroup.NameFor(cfg.ID), host.controllers)
	must.Eq(t, want.Paths, st.Cgroups.Paths)
	for _, p := range st.Cgroups.Paths {
		_, err := os.Stat(p)
		must.NoError(t, err)
	}
	own, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(st.Pid), "cgroup"))
	must.NoError(t, err)
	must.StrContains(t, string(own), cgroup.NameFor(cfg.ID))
	ins, err := d.InspectTask(cfg.ID)
	must.NoError(t, err)
	must.Eq(t, st.Cgroups.Paths[0], ins.DriverAttributes["cgroup"])

	// The task was in it from its start (its exec is counted), and no
	// thread of the agent, which forks from inside the cgroup on v1, was
	// left there.
	must.Positive(t, st.Cgroups.Usage().Memory.Usage)
	threads, err := filepath.Glob("/proc/self/task/*/cgroup")
	must.NoError(t, err)
	for _, f := range threads {
		b, err := os.ReadFile(f)
		if err == nil {
			must.StrNotContains(t, string(b), cgroup.NameFor(cfg.ID), must.Sprint(f))
		}
	}

	must.NoError(t, d.DestroyTask(cfg.ID, true))
	for _, p := range st.Cgroups.Paths {
		_, err := os.Stat(p)
		must.True(t, os.IsNotExist(err), must.Sprintf("cgroup %s removed", p))
	}
}

func busyStats(t *testing.T, d *Driver, id string) *drivers.TaskResourceUsage {
	t.Helper()
	return drivertest.BusyStats(t, d, id, testTimeout)
}

const busyLoop = drivertest.BusyLoop

// A busy task shows CPU and memory, from its cgroup where it has one, with
// the task's process among the pids.
func TestTaskStats_Cgroup(t *testing.T) {
	needCgroups(t)
	d := newTestDriver(t)
	cfg := newTaskConfig(t, "sh", "-c", busyLoop)
	st := startSleep(t, d, cfg)
	u := busyStats(t, d, cfg.ID)
	must.SliceContains(t, u.ResourceUsage.MemoryStats.Measured, drivers.MeasuredRSS)
	must.SliceContains(t, u.ResourceUsage.CpuStats.Measured, drivers.MeasuredPercent)
	must.Positive(t, u.ResourceUsage.MemoryStats.Usage)
	must.MapContainsKey(t, u.Pids, strconv.Itoa(st.Pid))
	must.Positive(t, u.Timestamp)
}

// Without cgroups (a non-root agent) the stats come from /proc for the
// task's process group.
func TestTaskStats_NoCgroup(t *testing.T) {
	d := newTestDriver(t)
	d.cgroupHost = func() cgroupHost { return cgroupHost{} }
	cfg := newTaskConfig(t, "sh", "-c", busyLoop)
	st := startSleep(t, d, cfg)
	must.Nil(t, st.Cgroups)
	u := busyStats(t, d, cfg.ID)
	must.Eq(t, []string{drivers.MeasuredRSS}, u.ResourceUsage.MemoryStats.Measured)
	must.MapContainsKey(t, u.Pids, strconv.Itoa(st.Pid))
}

// A client that re-attached to a task after a restart still reads its
// stats from the cgroup in the handle, and removes that cgroup on destroy.
func TestTaskStats_AfterRecover(t *testing.T) {
	needCgroups(t)
	d1 := newTestDriver(t)
	cfg := newTaskConfig(t, "sh", "-c", busyLoop)
	h, err := d1.StartTask(cfg)
	must.NoError(t, err)
	saved := persisted(t, h)

	d2 := newTestDriver(t)
	must.NoError(t, d2.RecoverTask(saved))
	w, err := d2.tasks.Get(cfg.ID)
	must.NoError(t, err)
	must.NotNil(t, w.State.Cgroups)
	busyStats(t, d2, cfg.ID)

	must.NoError(t, d2.DestroyTask(cfg.ID, true))
	for _, p := range w.State.Cgroups.Paths {
		_, err := os.Stat(p)
		must.True(t, os.IsNotExist(err), must.Sprintf("cgroup %s removed", p))
	}
	_, err = d2.TaskStats(cfg.ID)
	must.ErrorIs(t, err, drivers.ErrTaskNotFound)
}

// A handle whose cgroup is not the driver's is refused, so that a corrupt
// one cannot make the client kill or remove someone else's cgroup.
func TestRecoverTask_ForeignCgroup(t *testing.T) {
	d := newTestDriver(t)
	h := &drivers.TaskHandle{Version: HandleVersion, Config: &drivers.TaskConfig{ID: "a/b"}}
	must.NoError(t, h.SetDriverState(taskState{Pid: 4242, Pgid: 4242, StartTime: 1,
		Cgroups: &cgroup.Cgroups{Version: 1, Paths: []string{"/sys/fs/cgroup/memory/system.slice"}}}))
	must.ErrorIs(t, d.RecoverTask(h), drivers.ErrInvalidHandle)
}

// On a v2 host, cgroup_v2_override puts the task in an existing cgroup it
// does not own; a missing one is refused by key. On v1 hosts it does not
// apply, as upstream's, and the task gets its own.
func TestTaskCgroups_V2Override(t *testing.T) {
	root := t.TempDir()
	old := cgroup.Root
	cgroup.Root = root
	t.Cleanup(func() { cgroup.Root = old })
	must.NoError(t, os.MkdirAll(filepath.Join(root, "custom"), 0o755))
	must.NoError(t, os.WriteFile(filepath.Join(root, "custom", "cgroup.procs"), nil, 0o644))

	d := newTestDriver(t)
	d.cgroupHost = func() cgroupHost { return cgroupHost{version: 2} }
	cfg := newTaskConfig(t, "true")
	cg, err := d.taskCgroups(cfg, taskConfig{CgroupV2Override: "custom"})
	must.NoError(t, err)
	must.Eq(t, []string{filepath.Join(root, "custom")}, cg.Paths)
	must.True(t, cg.Shared)

	_, err = d.taskCgroups(cfg, taskConfig{CgroupV2Override: "nope"})
	var ce *drivers.ConfigError
	must.ErrorAs[*drivers.ConfigError](t, err, &ce)
	must.Eq(t, "cgroup_v2_override", ce.Key)

	must.NoError(t, os.MkdirAll(filepath.Join(root, "memory"), 0o755))
	must.NoError(t, os.WriteFile(filepath.Join(root, "memory", "cgroup.procs"), nil, 0o644))
	d.cgroupHost = func() cgroupHost { return cgroupHost{version: 1, controllers: []string{"memory"}} }
	cg, err = d.taskCgroups(cfg, taskConfig{CgroupV2Override: "custom"})
	must.NoError(t, err)
	must.False(t, cg.Shared)
	must.Eq(t, []string{filepath.Join(root, "memory", cgroup.ParentV1, cgroup.NameFor(cfg.ID))}, cg.Paths)
}

// A task that ended while no client watched it leaves its cgroup behind;
// the client that then fails to re-attach removes it, since nobody else
// ever will.
func TestRecoverTask_GoneRemovesCgroup(t *testing.T) {
	needCgroups(t)
	d1 := newTestDriver(t)
	cfg := newTaskConfig(t, "true")
	h, err := d1.StartTask(cfg)
	must.NoError(t, err)
	waitExit(t, d1, cfg.ID)
	var st taskState
	must.NoError(t, h.GetDriverState(&st))
	must.NotNil(t, st.Cgroups)
	_, err = os.Stat(st.Cgroups.Paths[0])
	must.NoError(t, err, must.Sprint("not destroyed yet: the client crashed"))

	d2 := newTestDriver(t)
	must.ErrorIs(t, d2.RecoverTask(persisted(t, h)), drivers.ErrTaskNotFound)
	for _, p := range st.Cgroups.Paths {
		_, err := os.Stat(p)
		must.True(t, os.IsNotExist(err), must.Sprintf("cgroup %s removed", p))
	}
}
