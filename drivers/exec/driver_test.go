//go:build linux

package exec

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/internal/drivertest"
)

// testTimeout bounds every wait; hitting it means a lost exit.
const testTimeout = 20 * time.Second

// needIsolation skips a test on a host where the driver cannot work, saying
// why: these tests start real isolated processes.
func needIsolation(t *testing.T) {
	t.Helper()
	if v, reason := checkHost(); v == 0 {
		t.Skipf("exec driver tests need root, namespaces and cgroups: %s", reason)
	}
}

func newTestDriver(t *testing.T, cfg map[string]any) *Driver {
	t.Helper()
	d, err := New(drivers.Options{Config: cfg})
	must.NoError(t, err)
	t.Cleanup(func() {
		for _, id := range d.tasks.IDs() {
			_ = d.DestroyTask(id, true)
		}
	})
	return d
}

// taskSeq numbers test tasks, so that their IDs (and cgroups) never clash.
var taskSeq atomic.Int64

// newTaskConfig lays out an allocation dir the way the client does, under a
// directory the task user can traverse (t.TempDir is 0700).
func newTaskConfig(t *testing.T, command string, args ...string) *drivers.TaskConfig {
	t.Helper()
	dir := t.TempDir()
	must.NoError(t, os.Chmod(dir, 0o755))
	alloc := filepath.Join(dir, "alloc1")
	shared := filepath.Join(alloc, "alloc")
	task := filepath.Join(alloc, "web")
	for _, p := range []string{shared, filepath.Join(shared, "logs"), filepath.Join(task, "local"), filepath.Join(task, "secrets")} {
		must.NoError(t, os.MkdirAll(p, 0o755))
	}
	id := fmt.Sprintf("alloc%d-%d-%s", os.Getpid(), taskSeq.Add(1), strings.ReplaceAll(t.Name(), "/", "-"))
	return &drivers.TaskConfig{
		ID:         id + "/web",
		Name:       "web",
		AllocID:    id,
		TaskDir:    task,
		LocalDir:   filepath.Join(task, "local"),
		SecretsDir: filepath.Join(task, "secrets"),
		AllocDir:   shared,
		StdoutPath: filepath.Join(shared, "logs", "web.stdout.0"),
		StderrPath: filepath.Join(shared, "logs", "web.stderr.0"),
		Config:     map[string]any{"command": command, "args": toAny(args)},
	}
}

func toAny(ss []string) []any { return drivertest.Args(ss...) }

func waitExit(t *testing.T, d drivers.Driver, id string) *drivers.ExitResult {
	t.Helper()
	return drivertest.WaitExit(t, d, id, testTimeout)
}

// runScript runs a shell script as an exec task to completion and returns
// its result and stdout.
func runScript(t *testing.T, d *Driver, cfg *drivers.TaskConfig) (*drivers.ExitResult, string) {
	t.Helper()
	_, err := d.StartTask(cfg)
	must.NoError(t, err)
	res := waitExit(t, d, cfg.ID)
	out, err := os.ReadFile(cfg.StdoutPath)
	must.NoError(t, err)
	if !res.Successful() {
		stderr, _ := os.ReadFile(cfg.StderrPath)
		t.Logf("task stderr: %s", stderr)
	}
	return res, string(out)
}

// A task's exit code and output reach the client, from inside its chroot.
func TestStartTask_ExitCodeAndOutput(t *testing.T) {
	needIsolation(t)
	d := newTestDriver(t, nil)
	cfg := newTaskConfig(t, "/bin/sh", "-c", "echo hello; exit 3")
	res, out := runScript(t, d, cfg)
	must.Eq(t, 3, res.ExitCode)
	must.Eq(t, "hello\n", out)
}

// The task gets namespaces of its own, as /proc shows them: it is PID 1 of
// its PID namespace and sees none of the host's processes, so it cannot
// signal or read them.
func TestStartTask_Namespaces(t *testing.T) {
	needIsolation(t)
	d := newTestDriver(t, nil)
	cfg := newTaskConfig(t, "/bin/sh", "-c",
		`for ns in pid mnt ipc uts; do readlink /proc/self/ns/$ns; done; echo "pid $$"; cat /proc/sys/kernel/hostname; ls /proc | grep -c '^[0-9]'`)
	res, out := runScript(t, d, cfg)
	must.True(t, res.Successful(), must.Sprint(res))
	lines := strings.Split(strings.TrimSpace(out), "\n")
	must.SliceLen(t, 7, lines, must.Sprint(out))
	for i, ns := range []string{"pid", "mnt", "ipc", "uts"} {
		host, err := os.Readlink("/proc/self/ns/" + ns)
		must.NoError(t, err)
		must.NotEq(t, host, lines[i], must.Sprintf("the task's %s namespace is its own", ns))
	}
	must.Eq(t, "pid 1", lines[4])
	must.Eq(t, "web", lines[5], must.Sprint("the UTS namespace carries the task's name"))
	// The shell and the ls it forked; grep runs beside ls, so 2 or 3.
	must.StrContains(t, "23", lines[6], must.Sprintf("the task sees only its own processes, got %s", lines[6]))
}

// pid_mode = "host" shares the host's PID namespace, but only where the
// operator allowed it.
func TestStartTask_PidModeHost(t *testing.T) {
	needIsolation(t)
	cfg := newTaskConfig(t, "/bin/sh", "-c", "readlink /proc/self/ns/pid")
	cfg.Config["pid_mode"] = "host"
	_, err := newTestDriver(t, nil).StartTask(cfg)
	must.ErrorIs(t, err, drivers.ErrInvalidConfig)
	must.StrContains(t, err.Error(), "pid_mode")

	d := newTestDriver(t, map[string]any{"default_pid_mode": "host"})
	res, out := runScript(t, d, cfg)
	must.True(t, res.Successful(), must.Sprint(res))
	host, err := os.Readlink("/proc/self/ns/pid")
	must.NoError(t, err)
	must.Eq(t, host, strings.TrimSpace(out))
}

// A task runs as nobody unless its job names a user: an exec task must not
// get root by default.
func TestStartTask_User(t *testing.T) {
	needIsolation(t)
	d := newTestDriver(t, nil)
	cfg := newTaskConfig(t, "/bin/sh", "-c", "id -u; id -g; touch /local/ok && echo wrote")
	res, out := runScript(t, d, cfg)
	must.True(t, res.Successful(), must.Sprint(res))
	nobody, err := lookupUser("nobody")
	must.NoError(t, err)
	must.Eq(t, []string{itoa(nobody.UID), itoa(nobody.GID), "wrote"}, strings.Fields(out))

	root := newTaskConfig(t, "/bin/sh", "-c", "id -u")
	root.User = "root"
	res, out = runScript(t, d, root)
	must.True(t, res.Successful(), must.Sprint(res))
	must.Eq(t, "0", strings.TrimSpace(out))

	bad := newTaskConfig(t, "/bin/true")
	bad.User = "no-such-user-here"
	_, err = d.StartTask(bad)
	must.ErrorContains(t, err, `task user "no-such-user-here"`)
}

// The task's root holds the host's system dirs read-only and its own
// directories, and nothing else of the host: not the agent's data dir, not
// another allocation's files.
func TestStartTask_Chroot(t *testing.T) {
	needIsolation(t)
	d := newTestDriver(t, nil)
	cfg := newTaskConfig(t, "/bin/sh", "-c", `
		ls / | tr '\n' ' '; echo
		test -e "$1" && echo "data dir visible" || echo "data dir hidden"
		touch /usr/x 2>/dev/null && echo "usr writable" || echo "usr read-only"
		echo shared > /alloc/from-task && echo "alloc writable"
		echo "$NOMAD_TASK_DIR $NOMAD_ALLOC_DIR $NOMAD_SECRETS_DIR"`)
	dataDir := filepath.Dir(filepath.Dir(cfg.TaskDir))
	cfg.Config["args"] = append(cfg.Config["args"].([]any), "sh", dataDir)
	cfg.User = "root" // root, so that only the mount refuses the write
	cfg.Env = map[string]string{"NOMAD_TASK_DIR": "/local", "NOMAD_ALLOC_DIR": "/alloc", "NOMAD_SECRETS_DIR": "/secrets"}
	res, out := runScript(t, d, cfg)
	must.True(t, res.Successful(), must.Sprint(res))
	lines := strings.Split(strings.TrimSpace(out), "\n")
	must.SliceLen(t, 5, lines, must.Sprint(out))
	root := strings.Fields(lines[0])
	for _, want := range []string{"alloc", "bin", "dev", "etc", "local", "proc", "secrets", "tmp", "usr"} {
		must.SliceContains(t, root, want)
	}
	must.Eq(t, "data dir hidden", lines[1])
	must.Eq(t, "usr read-only", lines[2])
	must.Eq(t, "alloc writable", lines[3])
	b, err := os.ReadFile(filepath.Join(cfg.AllocDir, "from-task"))
	must.NoError(t, err)
	must.Eq(t, "shared\n", string(b))
	must.Eq(t, "/local /alloc /secrets", lines[4])
}

func itoa(n int) string { return strconv.Itoa(n) }

// A root task that swaps its /local for a symlink to a host path cannot
// make the next start of the task hand that host path to the task's user.
func TestStartTask_SymlinkedTaskDirRefused(t *testing.T) {
	needIsolation(t)
	d := newTestDriver(t, nil)
	cfg := newTaskConfig(t, "/bin/sh", "-c", "rmdir /local && ln -s /etc /local")
	cfg.User = "root"
	res, _ := runScript(t, d, cfg)
	must.True(t, res.Successful(), must.Sprint(res))
	must.NoError(t, d.DestroyTask(cfg.ID, false))

	cfg.User = ""
	cfg.Config = map[string]any{"command": "/bin/true"}
	_, err := d.StartTask(cfg)
	must.ErrorContains(t, err, "is not a directory")
	fi, err := os.Stat("/etc")
	must.NoError(t, err)
	must.Eq(t, uint32(0), fi.Sys().(*syscall.Stat_t).Uid, must.Sprint("the host's /etc still belongs to root"))
}
