package cluster

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/testutil/wait"
)

// jobIDsOn lists the jobs server s holds itself (?stale: no forwarding).
func jobIDsOn(s interface {
	GetJSON(string, any) error
}) ([]string, error) {
	var jobs []struct{ ID string }
	if err := s.GetJSON("/v1/jobs?stale", &jobs); err != nil {
		return nil, err
	}
	var ids []string
	for _, j := range jobs {
		ids = append(ids, j.ID)
	}
	slices.Sort(ids)
	return ids, nil
}

// `nomad operator snapshot save` through a follower (handed to the leader),
// `save -stale` from the follower's own state, and `restore` through a
// client-only agent (handed to a server, then to the leader) rewind all
// three server processes to the snapshot, and the job it holds keeps its
// task, unrestarted: the operator's backup and recovery path end to end.
func TestCluster_SnapshotSaveRestore(t *testing.T) {
	c := newCluster(t, clusterOpts{servers: 3, clients: 1})
	c.startServers()
	c.startClients()
	before := c.registerJob(c.follower(), sleepJob("kept", 1))

	dir := t.TempDir()
	path := filepath.Join(dir, "backup.snap")
	out, code := c.follower().Nomad("operator", "snapshot", "save", path)
	must.Eq(t, 0, code, must.Sprint(out))
	must.StrContains(t, out, "State file written to "+path)
	out, code = c.follower().Nomad("operator", "snapshot", "save", "-stale", filepath.Join(dir, "stale.snap"))
	must.Eq(t, 0, code, must.Sprint(out))
	out, code = c.follower().Nomad("operator", "snapshot", "inspect", path)
	must.Eq(t, 0, code, must.Sprint(out))
	must.StrContains(t, out, "Version  1")

	c.registerJob(c.follower(), sleepJob("later", 1))

	out, code = c.clients[0].Nomad("operator", "snapshot", "restore", path)
	must.Eq(t, 0, code, must.Sprint(out))
	must.Eq(t, "Snapshot Restored", strings.TrimSpace(out))

	for _, s := range c.servers {
		wait.Poll(t, 30*time.Second, fmt.Sprintf("%s holds only the snapshot's job", s.Name), func() (bool, string) {
			ids, err := jobIDsOn(s)
			if err != nil {
				return false, err.Error()
			}
			return slices.Equal(ids, []string{"kept"}), fmt.Sprint("jobs ", ids)
		})
	}
	now, err := c.tasks("kept")
	must.NoError(t, err)
	mustBeUnrestarted(t, before, now)
}
