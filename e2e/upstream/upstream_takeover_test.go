package upstream

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/upstreamstate"
	"github.com/nomad-edge/nomad/e2e/internal/harness"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// counterJob is a raw_exec job whose task writes a numbered line to
// stdout and to stderr five times a second: a log that shows whether its
// writes went on through a change of client.
func counterJob(id string) *nomadapi.Job {
	job := sleepJob(id)
	job.TaskGroups[0].Tasks[0].SetConfig("args", []string{"-c",
		`i=0; while :; do i=$((i+1)); echo "line $i"; echo "err $i" >&2; sleep 0.2; done`})
	return job
}

// leaderPID is the allocation's task process: the leader of its process
// group (its loop's short-lived children share its environment).
func leaderPID(t *testing.T, allocID string) int {
	t.Helper()
	var pid int
	wait.Poll(t, 20*time.Second, "the task's process of "+allocID[:8], func() (bool, string) {
		pids := harness.AllocPIDs(allocID)
		for _, p := range pids {
			if pg, err := syscall.Getpgid(p); err == nil && pg == p {
				pid = p
				return true, ""
			}
		}
		return false, fmt.Sprintf("pids %v, none leads its group", pids)
	})
	return pid
}

// lastLine is the number of the last "line N" the task's stdout file
// holds, and how many numbers below it are missing.
func lastLine(t *testing.T, path string) (last, missing int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0
	}
	seen := map[int]bool{}
	for _, m := range regexp.MustCompile(`(?m)^line (\d+)$`).FindAllStringSubmatch(string(b), -1) {
		n, _ := strconv.Atoi(m[1])
		seen[n] = true
		last = max(last, n)
	}
	for i := 1; i <= last; i++ {
		if !seen[i] {
			missing++
		}
	}
	return last, missing
}

// TestUpstreamClientStateReads checks client/upstreamstate against what
// the real upstream 1.6.5 client wrote: while its agent runs, state.db is
// reported locked; once it stopped, the node is the one our server knows,
// the allocation and task are the ones it ran, and the PIDs read are the
// task's running process (the leader of its group, with the allocation in
// its environment) and its executor, its parent, both outliving the agent.
func TestUpstreamClientStateReads(t *testing.T) {
	c := startUpstreamCluster(t)
	nodeID := c.waitNode("ready").ID
	_, _, err := c.server.API().Jobs().Register(sleepJob("sleeper"), nil)
	must.NoError(t, err)
	alloc := c.waitAlloc("sleeper", "running")
	pid := leaderPID(t, alloc.ID)
	dataDir := c.client.DataDir

	_, err = upstreamstate.Read(dataDir, upstreamstate.Options{LockTimeout: 100 * time.Millisecond})
	must.ErrorIs(t, err, upstreamstate.ErrLocked)
	c.client.Stop()

	node, err := upstreamstate.Read(dataDir, upstreamstate.Options{})
	must.NoError(t, err)
	must.Eq(t, nodeID, node.NodeID)
	must.Len(t, 1, node.Allocs)
	a := node.Allocs[0]
	must.Eq(t, alloc.ID, a.ID)
	must.Eq(t, "sleeper", a.JobID)
	must.Eq(t, "sleep", a.TaskGroup)
	must.Eq(t, "running", a.ClientStatus)
	must.Len(t, 1, a.Tasks)
	task := a.Tasks[0]
	must.Eq(t, "sleep", task.Name)
	must.Eq(t, "raw_exec", task.Driver)
	must.Eq(t, pid, task.RunningPID())
	got, ok := upstreamstate.TaskProcess(a.ID, task)
	must.True(t, ok)
	must.Eq(t, pid, got)
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	must.NoError(t, err, must.Sprint("the task's process is gone after the agent stopped"))
	fields := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+2:]))
	must.Eq(t, strconv.Itoa(task.Handle.ExecutorPID), fields[1], must.Sprint("the executor is the task's parent"))
	kinds := map[upstreamstate.HelperKind]int{}
	for _, h := range upstreamstate.Helpers(filepath.Join(dataDir, "alloc"), a.ID, task) {
		kinds[h.Kind]++
	}
	must.Eq(t, map[upstreamstate.HelperKind]int{upstreamstate.Executor: 1, upstreamstate.Logmon: 1}, kinds)
}

// TestOurClientTakesOverAnUpstreamNode is the client half of the in-place
// upgrade (upgrading.md, "Replacing an upstream client"): an upstream
// 1.6.5 client runs two allocations on our server and is stopped; while
// it is away one of its jobs is stopped. Our client, started on its
// data_dir, is the same node (same ID, no new node), re-attaches to the
// running task (same PID, no restart, its log file goes on), kills the
// task of the stopped job, and leaves none of upstream's helpers (executor,
// logmon) running; upstream's files are moved aside, and a restart of our
// client is an ordinary one.
func TestOurClientTakesOverAnUpstreamNode(t *testing.T) {
	c := startUpstreamCluster(t)
	nodeID := c.waitNode("ready").ID
	api := c.server.API()
	_, _, err := api.Jobs().Register(counterJob("keep"), nil)
	must.NoError(t, err)
	keep := c.waitAlloc("keep", "running")
	_, _, err = api.Jobs().Register(sleepJob("gone"), nil)
	must.NoError(t, err)
	gone := c.waitAlloc("gone", "running")
	iso := sleepJob("iso")
	iso.TaskGroups[0].Tasks[0].Driver = "exec"
	iso.TaskGroups[0].Tasks[0].SetConfig("command", "/bin/sleep")
	iso.TaskGroups[0].Tasks[0].SetConfig("args", []string{"3600"})
	_, _, err = api.Jobs().Register(iso, nil)
	must.NoError(t, err)
	isoAlloc := c.waitAlloc("iso", "running")
	pid, gonePID, isoPID := leaderPID(t, keep.ID), leaderPID(t, gone.ID), leaderPID(t, isoAlloc.ID)
	dataDir := c.client.DataDir
	allocDir := filepath.Join(dataDir, "alloc")
	stdout := filepath.Join(allocDir, keep.ID, "alloc", "logs", "sleep.stdout.0")

	c.client.Stop()
	node, err := upstreamstate.Read(dataDir, upstreamstate.Options{})
	must.NoError(t, err)
	must.Eq(t, nodeID, node.NodeID)
	var helpers []upstreamstate.Helper
	for _, a := range node.Allocs {
		for _, task := range a.Tasks {
			helpers = append(helpers, upstreamstate.Helpers(allocDir, a.ID, task)...)
		}
	}
	must.SliceLen(t, 6, helpers, must.Sprintf("an executor and a logmon per task outlive the upstream agent: %v", helpers))
	must.True(t, harness.Alive(pid) && harness.Alive(gonePID) && harness.Alive(isoPID))
	_, _, err = api.Jobs().Deregister("gone", false, nil)
	must.NoError(t, err)

	cp := harness.FreePorts(t)
	ours := c.agents.Add(harness.AgentConfig{
		Name:   "our-client",
		Ports:  cp,
		Config: ourClientConfig("upstream-1", dataDir, cp, []string{strconv.Quote(c.server.RPCAddr())}),
	})
	before, _ := lastLine(t, stdout)
	ours.Start()

	back := c.waitAlloc("keep", "running")
	must.Eq(t, keep.ID, back.ID)
	nodes, _, err := api.Nodes().List(nil)
	must.NoError(t, err)
	must.SliceLen(t, 1, nodes, must.Sprint("the same node, not a new one"))
	must.Eq(t, nodeID, nodes[0].ID)
	wait.Poll(t, 30*time.Second, "the node ready, run by our client", func() (bool, string) {
		n, _, err := api.Nodes().Info(nodeID, nil)
		if err != nil {
			return false, err.Error()
		}
		return n.Status == "ready" && n.Attributes["nomad.upstream"] != "true",
			fmt.Sprintf("status %s version %s", n.Status, n.Attributes["nomad.version"])
	})
	wait.Poll(t, 30*time.Second, "the task re-attached, not restarted", func() (bool, string) {
		ts, msgs, err := taskEvents(api, keep.ID, "sleep")
		if err != nil {
			return false, err.Error()
		}
		ok := ts.State == "running" && ts.Restarts == 0 &&
			strings.Contains(strings.Join(msgs, "\n"), "taken over from an upstream Nomad client")
		return ok, fmt.Sprintf("state %s restarts %d events %q", ts.State, ts.Restarts, msgs)
	})
	must.True(t, harness.Alive(pid), must.Sprint("the same process"))
	must.Eq(t, pid, leaderPID(t, keep.ID))
	wait.Poll(t, 20*time.Second, "the stopped job's task killed", func() (bool, string) {
		return !harness.Alive(gonePID), fmt.Sprintf("pid %d alive", gonePID)
	})
	// The executors are gone, the stopped job's logmon too; the running
	// task's logmon stays, stopped, as its FIFOs' standby reader.
	wait.Poll(t, 20*time.Second, "upstream's helpers gone but the running task's logmon, stopped", func() (bool, string) {
		var left []string
		ok := true
		for _, h := range helpers {
			st := procState(h.PID)
			left = append(left, fmt.Sprintf("%s %d %q", h.Kind, h.PID, st))
			if h.Kind == upstreamstate.Logmon && upstreamstate.HoldsAny(h.PID, upstreamstate.LogFIFOs(allocDir, keep.ID, "sleep")) {
				ok = ok && st == "T"
			} else {
				ok = ok && st == ""
			}
		}
		return ok, fmt.Sprint(left)
	})
	// Upstream's exec task runs in a container of its own, which our exec
	// driver does not take over: it is killed, then started again by our
	// client, and its events say why.
	wait.Poll(t, 30*time.Second, "the exec task started again by our client, saying why", func() (bool, string) {
		ts, msgs, err := taskEvents(api, isoAlloc.ID, "sleep")
		if err != nil {
			return false, err.Error()
		}
		pids := harness.AllocPIDs(isoAlloc.ID)
		ok := ts.State == "running" && strings.Contains(strings.Join(msgs, "\n"), "libcontainer") &&
			!harness.Alive(isoPID) && len(pids) == 1 && pids[0] != isoPID
		return ok, fmt.Sprintf("state %s pids %v (upstream's %d) events %q", ts.State, pids, isoPID, msgs)
	})
	var last, missing int
	wait.Poll(t, 20*time.Second, "the task's log going on in the same file", func() (bool, string) {
		last, missing = lastLine(t, stdout)
		return last > before+10, fmt.Sprintf("last line %d, %d before our client", last, before)
	})
	t.Logf("log: last line %d (%d when our client started), %d numbers missing", last, before, missing)
	must.True(t, harness.Alive(pid), must.Sprint("its writes went on without a reader lost"))

	moved := filepath.Join(dataDir, "client", "upstream-1.6.5")
	wait.Poll(t, 20*time.Second, "upstream's files moved aside", func() (bool, string) {
		_, errID := os.Stat(filepath.Join(dataDir, upstreamstate.NodeIDFile))
		_, errMoved := os.Stat(filepath.Join(moved, "state.db"))
		return os.IsNotExist(errID) && errMoved == nil, fmt.Sprintf("client-id: %v, moved state.db: %v", errID, errMoved)
	})

	// A restart is an ordinary one: our own state, the same node.
	ours.Stop()
	ours.Start()
	wait.Poll(t, 30*time.Second, "the node ready again", func() (bool, string) {
		n, _, err := api.Nodes().Info(nodeID, nil)
		if err != nil {
			return false, err.Error()
		}
		return n.Status == "ready", n.Status
	})
	harness.Hold(t, 3*time.Second, "the task keeps running, same process, no restart", func() error {
		a, _, err := api.Allocations().Info(keep.ID, nil)
		if err != nil {
			return err
		}
		if ts := a.TaskStates["sleep"]; ts.State != "running" || ts.Restarts != 0 {
			return fmt.Errorf("state %s restarts %d", ts.State, ts.Restarts)
		}
		if !harness.Alive(pid) {
			return fmt.Errorf("pid %d gone", pid)
		}
		return nil
	})
	must.StrNotContains(t, ours.Log()[strings.LastIndex(ours.Log(), "===== e2e: start #2"):], "taking over")

	// The job's end takes the standby with the allocation.
	_, _, err = api.Jobs().Deregister("keep", true, nil)
	must.NoError(t, err)
	wait.Poll(t, 30*time.Second, "the task and every upstream helper gone with the purged job", func() (bool, string) {
		var left []string
		for _, h := range helpers {
			if st := procState(h.PID); st != "" {
				left = append(left, fmt.Sprintf("%s %d %q", h.Kind, h.PID, st))
			}
		}
		return len(left) == 0 && !harness.Alive(pid), fmt.Sprintf("left %v, task alive %v", left, harness.Alive(pid))
	})
	wait.Poll(t, 20*time.Second, "the client's GC of the allocation taken", func() (bool, string) {
		// The purge may have taken it from the servers already: 404.
		err := api.Allocations().GC(keep, nil)
		return err == nil || strings.Contains(err.Error(), "404"), fmt.Sprint(err)
	})
	wait.Poll(t, 20*time.Second, "the allocation's directory removed, upstream's secrets tmpfs with it", func() (bool, string) {
		_, err := os.Stat(filepath.Join(allocDir, keep.ID))
		return os.IsNotExist(err), fmt.Sprint(err)
	})
}

// taskEvents is a task's state as the servers have it, with its events
// as "<type>: <message>".
func taskEvents(api *nomadapi.Client, allocID, task string) (*nomadapi.TaskState, []string, error) {
	a, _, err := api.Allocations().Info(allocID, nil)
	if err != nil {
		return nil, nil, err
	}
	ts := a.TaskStates[task]
	if ts == nil {
		return nil, nil, fmt.Errorf("no state for task %s", task)
	}
	var msgs []string
	for _, e := range ts.Events {
		msgs = append(msgs, e.Type+": "+e.DisplayMessage)
	}
	return ts, msgs, nil
}

// procState is the state letter /proc gives process pid (R, S, T, Z...),
// "" when there is none or it is a zombie.
func procState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return ""
	}
	if st := s[i+2 : i+3]; st != "Z" {
		return st
	}
	return ""
}
