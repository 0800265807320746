package command

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/cli"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

func operatorDebug(m Meta) cli.Command { return &OperatorDebugCommand{Meta: m} }

// debugDirName is the bundle's name: nomad-debug-<UTC date-time>Z.
var debugDirName = regexp.MustCompile(`^nomad-debug-\d{4}-\d{2}-\d{2}-\d{6}Z$`)

// debugPerTarget are the files each server and client directory holds
// when the agent serves profiles.
var debugPerTarget = []string{
	"agent-host.json", "monitor.log", "profile_0000.prof", "trace.prof", "heap.prof", "allocs.prof",
	"threadcreate.prof", "goroutine.prof", "goroutine-debug1.txt", "goroutine-debug2.txt",
}

// debugPerInterval are the files of each interval/NNNN directory.
var debugPerInterval = []string{
	"jobs.json", "allocations.json", "evaluations.json", "deployments.json", "nodes.json",
	"metrics.json", "operator-raft.json", "operator-scheduler.json", "operator-autopilot-health.json",
}

// readDebugIndex reads a bundle's index.json.
func readDebugIndex(t *testing.T, raw []byte) debugIndex {
	t.Helper()
	var ix debugIndex
	must.NoError(t, json.Unmarshal(raw, &ix))
	return ix
}

// missReason returns why path is listed as not captured, or "".
func missReason(ix debugIndex, path string) string {
	for _, m := range ix.NotCaptured {
		if m.Path == path {
			return m.Reason
		}
	}
	return ""
}

// With -output, the bundle is a directory in upstream's layout: the
// cluster's state, the server's and the client's log and profiles, one
// interval directory per -interval inside -duration, the event stream,
// and an index naming every file and every endpoint this agent lacks.
// This is what an operator hands over when asked for a debug bundle.
func TestOperatorDebug_OutputDirectory(t *testing.T) {
	a := agenttest.NewDevAgent(t, func(c *agent.Config) { c.EnableDebug = true })
	out := t.TempDir()

	code, stdout, stderr := run(t, a, operatorDebug,
		"-duration=2s", "-interval=1s", "-pprof-duration=200ms", "-output="+out, "-event-topic=Job:*")
	must.Eq(t, 0, code, must.Sprint(stderr))
	must.StrContains(t, stdout, "Starting debugger...")
	must.StrContains(t, stdout, "Interval          = 1s")
	must.StrContains(t, stdout, "Duration          = 2s")

	entries, err := os.ReadDir(out)
	must.NoError(t, err)
	must.SliceLen(t, 1, entries)
	name := entries[0].Name()
	must.RegexMatch(t, debugDirName, name)
	dir := filepath.Join(out, name)
	must.StrContains(t, stdout, "Created debug directory: "+dir+"\n")

	servers, err := os.ReadDir(filepath.Join(dir, "server"))
	must.NoError(t, err)
	must.SliceLen(t, 1, servers)
	must.StrHasSuffix(t, ".global", servers[0].Name())
	nodeID := a.Client().NodeID()

	var want []string
	for _, f := range []string{"cli-flags.json", "agent-self.json", "members.json", "leader.json", "namespaces.json", "nodes.json", "eventstream.json"} {
		want = append(want, "cluster/"+f)
	}
	for _, d := range []string{"server/" + servers[0].Name(), "client/" + nodeID} {
		for _, f := range debugPerTarget {
			want = append(want, d+"/"+f)
		}
	}
	for _, d := range []string{"interval/0000", "interval/0001"} {
		for _, f := range debugPerInterval {
			want = append(want, d+"/"+f)
		}
	}
	for _, f := range want {
		st, err := os.Stat(filepath.Join(dir, f))
		must.NoError(t, err, must.Sprintf("%s is in the bundle", f))
		if strings.HasSuffix(f, ".prof") || f == "cluster/leader.json" {
			must.Positive(t, st.Size(), must.Sprintf("%s is not empty", f))
		}
	}
	intervals, err := os.ReadDir(filepath.Join(dir, "interval"))
	must.NoError(t, err)
	must.SliceLen(t, 2, intervals, must.Sprint("a 2s capture at 1s intervals is two intervals"))

	// Every JSON file parses; the event stream is one object a line.
	must.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		must.NoError(t, err)
		must.False(t, strings.HasSuffix(p, ".partial"), must.Sprintf("no temporary file is left: %s", p))
		if d.IsDir() || !strings.HasSuffix(p, ".json") {
			return nil
		}
		f, err := os.Open(p)
		must.NoError(t, err)
		defer f.Close()
		dec := json.NewDecoder(f)
		for n := 0; ; n++ {
			var v any
			err := dec.Decode(&v)
			if errors.Is(err, io.EOF) && (n > 0 || strings.HasSuffix(p, "eventstream.json")) {
				return nil
			}
			must.NoError(t, err, must.Sprintf("%s parses", p))
		}
	}))

	raw, err := os.ReadFile(filepath.Join(dir, "index.json"))
	must.NoError(t, err)
	ix := readDebugIndex(t, raw)
	must.False(t, ix.Interrupted)
	for _, f := range want {
		must.SliceContains(t, ix.Files, f)
	}
	must.SliceContains(t, ix.Files, "cluster/regions.json")
	// Each target's host facts, named as the target was.
	host, err := os.ReadFile(filepath.Join(dir, "client", nodeID, "agent-host.json"))
	must.NoError(t, err)
	must.StrContains(t, string(host), `"AgentID":"`+nodeID+`"`)
	html, err := os.ReadFile(filepath.Join(dir, "index.html"))
	must.NoError(t, err)
	must.StrContains(t, string(html), `<a href="interval/0001/jobs.json">`)

	flags, err := os.ReadFile(filepath.Join(dir, "cluster/cli-flags.json"))
	must.NoError(t, err)
	must.StrContains(t, string(flags), `"interval": "1s"`)
}

// Without -output, the bundle is a .tar.gz in the current directory and
// nothing else is left there; an agent that does not serve profiles
// (no enable_debug) still gives a bundle, whose index says why the
// profiles are missing.
func TestOperatorDebug_Archive(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	cwd := t.TempDir()
	t.Chdir(cwd)

	code, stdout, stderr := run(t, a, operatorDebug, "-duration=1s", "-interval=1s", "-pprof-duration=200ms")
	must.Eq(t, 0, code, must.Sprint(stderr))

	entries, err := os.ReadDir(cwd)
	must.NoError(t, err)
	must.SliceLen(t, 1, entries, must.Sprint("only the archive is left in the current directory"))
	archive := entries[0].Name()
	must.StrHasSuffix(t, ".tar.gz", archive)
	name := strings.TrimSuffix(archive, ".tar.gz")
	must.RegexMatch(t, debugDirName, name)
	must.StrContains(t, stdout, "Created debug archive: "+archive+"\n")

	f, err := os.Open(archive)
	must.NoError(t, err)
	defer f.Close()
	gz, err := gzip.NewReader(f)
	must.NoError(t, err)
	tr := tar.NewReader(gz)
	names := map[string]bool{}
	var index []byte
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		must.NoError(t, err)
		must.StrHasPrefix(t, name+"/", hdr.Name)
		names[strings.TrimPrefix(hdr.Name, name+"/")] = true
		if hdr.Name == name+"/index.json" {
			index, err = io.ReadAll(tr)
			must.NoError(t, err)
		}
	}
	for _, f := range []string{"index.json", "index.html", "cluster/agent-self.json", "cluster/members.json", "interval/0000/jobs.json", "interval/0000/metrics.json", "client/" + a.Client().NodeID() + "/monitor.log"} {
		must.True(t, names[f], must.Sprintf("%s is in the archive", f))
	}
	must.False(t, names["interval/0001/"], must.Sprint("a 1s capture at 1s intervals is one interval"))
	must.False(t, names["cluster/eventstream.json"], must.Sprint("no event stream without -event-topic"))

	ix := readDebugIndex(t, index)
	must.StrContains(t, missReason(ix, "client/"+a.Client().NodeID()+"/heap.prof"), "enable_debug")
}

// Ctrl-C before the window opens still writes the bundle: the cluster's
// state and an index saying the capture was interrupted.
func TestOperatorDebug_Interrupted(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out := t.TempDir()
	cmd := func(m Meta) cli.Command { return &OperatorDebugCommand{Meta: m, ctx: ctx} }

	code, stdout, stderr := run(t, a, cmd, "-duration=1m", "-interval=10s", "-output="+out)
	must.Eq(t, 0, code, must.Sprint(stderr))
	must.StrContains(t, stdout, "Capture interrupted")
	entries, err := os.ReadDir(out)
	must.NoError(t, err)
	must.SliceLen(t, 1, entries)
	dir := filepath.Join(out, entries[0].Name())
	raw, err := os.ReadFile(filepath.Join(dir, "index.json"))
	must.NoError(t, err)
	ix := readDebugIndex(t, raw)
	must.True(t, ix.Interrupted)
	must.SliceContains(t, ix.Files, "cluster/agent-self.json")
	_, err = os.Stat(filepath.Join(dir, "interval"))
	must.True(t, os.IsNotExist(err), must.Sprint("no interval was begun"))
}

// Bad flags exit 1 before anything is asked or written, saying which flag
// is wrong; upstream's Consul and Vault flags are refused by name rather
// than accepted and ignored.
func TestOperatorDebug_FlagErrors(t *testing.T) {
	cwd := t.TempDir()
	t.Chdir(cwd)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-duration=2s", "-interval=5s"}, "Error parsing interval: 5s is greater than duration 2s"},
		{[]string{"-duration=soon"}, "Error parsing duration: soon is not a valid duration"},
		{[]string{"-pprof-interval=0s"}, "Error parsing pprof-interval: 0s must be greater than zero"},
		{[]string{"-log-level=LOUD"}, "Error parsing log-level"},
		{[]string{"-event-topic=Jobs:*"}, "Error parsing event-topic"},
		{[]string{"-consul-token=secret"}, "-consul-token is not supported: this build has no Consul integration"},
		{[]string{"-log-include-location"}, "-log-include-location is not supported"},
		{[]string{"-consul-ssl-verify"}, "-consul-ssl-verify is not supported: this build has no Consul integration"},
		{[]string{"-vault-address=http://127.0.0.1:8200"}, "-vault-address is not supported: this build has no Vault integration"},
	} {
		code, _, stderr := runLocal(t, operatorDebug, append([]string{"-address=http://127.0.0.1:1"}, tc.args...)...)
		must.Eq(t, 1, code, must.Sprint(tc.args))
		must.StrContains(t, stderr, tc.want)
	}
	entries, err := os.ReadDir(cwd)
	must.NoError(t, err)
	must.SliceEmpty(t, entries)
}
