package testutil_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"pgregory.net/rapid"

	"github.com/nomad-edge/nomad/helper/clock/clocktest"
	"github.com/nomad-edge/nomad/nomad"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// dataDirs records each server's data dir as StartServers configures it.
type dataDirs struct {
	mu   sync.Mutex
	dirs map[int]string
}

func (d *dataDirs) hook(next func(int, *nomad.Config)) func(int, *nomad.Config) {
	return func(i int, c *nomad.Config) {
		d.mu.Lock()
		d.dirs[i] = c.DataDir
		d.mu.Unlock()
		if next != nil {
			next(i, c)
		}
	}
}

// filesContaining lists the files under dir whose bytes contain marker.
func filesContaining(t *testing.T, dir string, marker []byte) []string {
	t.Helper()
	var hits []string
	must.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(b, marker) {
			hits = append(hits, path)
		}
		return nil
	}))
	return hits
}

// staleItems reads a variable from server s's own state (a stale read),
// decrypted with the keys s holds.
func staleItems(s *nomad.Server, path string) (map[string]string, error) {
	var reply structs.VariablesReadResponse
	err := s.RPC("Variables.Read", &structs.VariablesReadRequest{Path: path, QueryOptions: structs.QueryOptions{AllowStale: true}}, &reply)
	if err != nil || reply.Data == nil {
		return nil, err
	}
	return reply.Data.Items, nil
}

// Three servers: the leader makes the root key and the followers copy it
// (its material never goes through raft), so each decrypts a variable
// from its own state. No file in any server's data dir (raft log,
// snapshots, keystore) holds the item in the clear. After the leader
// stops, the new one encrypts new writes with the copied key and reads
// the old ones.
func TestServers_VariablesKeyReplicationAtRest(t *testing.T) {
	dirs := &dataDirs{dirs: map[int]string{}}
	sc := testutil.StartServers(t, testutil.ServersConfig{N: 3, Server: dirs.hook(nil)})
	leader := sc.WaitForLeader()
	follower := (leader + 1) % 3
	const marker = "at-rest-marker-51c2e8"
	var reply structs.VariablesApplyResponse
	must.NoError(t, sc.Servers[follower].RPC("Variables.Apply", &structs.VariablesApplyRequest{
		Op:  structs.VarOpSet,
		Var: &structs.VariableDecrypted{VariableMetadata: structs.VariableMetadata{Path: "db/creds"}, Items: structs.VariableItems{"password": marker}},
	}, &reply))

	for i, s := range sc.Servers {
		wait.Poll(t, 15*time.Second, fmt.Sprintf("server %d decrypts from its own state", i), func() (bool, string) {
			items, err := staleItems(s, "db/creds")
			if err != nil {
				return false, err.Error()
			}
			return items["password"] == marker, fmt.Sprintf("items %v", items)
		})
	}
	for i, dir := range dirs.dirs {
		must.SliceEmpty(t, filesContaining(t, dir, []byte(marker)), must.Sprintf("server %d stores the item in the clear", i))
		must.SliceNotEmpty(t, filesContaining(t, dir, []byte("db/creds")), must.Sprintf("server %d: the path (metadata) is on disk, so the scan read the raft log", i))
	}

	sc.Stop(leader)
	next := sc.WaitForLeaderExcept(leader)
	s := sc.Servers[next]
	must.NoError(t, s.RPC("Variables.Apply", &structs.VariablesApplyRequest{
		Op:  structs.VarOpSet,
		Var: &structs.VariableDecrypted{VariableMetadata: structs.VariableMetadata{Path: "db/after"}, Items: structs.VariableItems{"k": "v"}},
	}, &reply))
	items, err := staleItems(s, "db/creds")
	must.NoError(t, err)
	must.Eq(t, marker, items["password"])
}

// lockClient is what one client of the property believes: it holds the
// lock with id until deadline (its last successful acquire or renewal,
// sent at that instant of the shared clock, plus the TTL).
type lockClient struct {
	id       string
	deadline time.Time
}

// At most one client believes it holds a variable's lock at any instant,
// across three servers, lock expiry, lock delay and a leader change, and
// the one that does is the lock's holder of record. Clients believe as a
// careful client must: from an acquire or renewal the server confirmed,
// for TTL from the moment they sent it, whatever fails afterwards. The
// three servers share one manual clock (synchronised clocks), so expiry
// happens exactly when the test advances it. Leader changes are costly
// (a stop, an election, a restart): the whole run has a budget of two.
func TestServers_VariableLockAtMostOneHolder(t *testing.T) {
	clk := clocktest.NewManual(time.Unix(1_000_000, 0))
	sc := testutil.StartServers(t, testutil.ServersConfig{N: 3, Server: func(_ int, c *nomad.Config) {
		c.Clock = clk
		c.NodeStatusBatchWindow, c.AllocUpdateBatchWindow = 0, 0
	}})
	const ttl = 10 * time.Second
	leaderChanges := 2
	run, acquired, refused, renewed := 0, 0, 0, 0

	rapid.Check(t, func(rt *rapid.T) {
		run++
		path := fmt.Sprintf("locks/run-%d", run)
		delay := rapid.SampledFrom([]time.Duration{0, 2 * time.Second, 5 * time.Second}).Draw(rt, "delay")
		clients := make([]*lockClient, 3)

		server := func(rt *rapid.T) *nomad.Server {
			var up []*nomad.Server
			for _, s := range sc.Servers {
				if s != nil {
					up = append(up, s)
				}
			}
			return up[rapid.IntRange(0, len(up)-1).Draw(rt, "server")]
		}
		believers := func() []int {
			var out []int
			for i, c := range clients {
				if c != nil && clk.Now().Before(c.deadline) {
					out = append(out, i)
				}
			}
			return out
		}
		check := func(rt *rapid.T) {
			b := believers()
			if len(b) > 1 {
				rt.Fatalf("clients %v all believe they hold %s at %s", b, path, clk.Now())
			}
			if len(b) == 1 {
				l := sc.Servers[sc.WaitForLeader()]
				v, err := l.State().VarGet(nil, structs.DefaultNamespace, path)
				if err != nil || v == nil || v.LockID() != clients[b[0]].id {
					rt.Fatalf("client %d believes it holds %s with %q, the leader's state says %+v (err %v)", b[0], path, clients[b[0]].id, v, err)
				}
			}
		}

		rt.Repeat(map[string]func(*rapid.T){
			"acquire": func(rt *rapid.T) {
				i := rapid.IntRange(0, 2).Draw(rt, "client")
				sent := clk.Now()
				var reply structs.VariablesApplyResponse
				err := server(rt).RPC("Variables.Apply", &structs.VariablesApplyRequest{
					Op: structs.VarOpLockAcquire,
					Var: &structs.VariableDecrypted{VariableMetadata: structs.VariableMetadata{Path: path,
						Lock: &structs.VariableLock{TTL: ttl, LockDelay: delay}}},
				}, &reply)
				if err == nil && reply.Result == structs.VarOpResultOk {
					clients[i] = &lockClient{id: reply.Output.LockID(), deadline: sent.Add(ttl)}
					acquired++
				} else {
					refused++
				}
				check(rt)
			},
			"renew": func(rt *rapid.T) {
				i := rapid.IntRange(0, 2).Draw(rt, "client")
				c := clients[i]
				if c == nil {
					return
				}
				sent := clk.Now()
				err := server(rt).RPC("Variables.RenewLock", &structs.VariablesRenewLockRequest{Path: path, LockID: c.id}, &structs.VariablesRenewLockResponse{})
				if err == nil {
					c.deadline = sent.Add(ttl)
					renewed++
				}
				check(rt)
			},
			"release": func(rt *rapid.T) {
				i := rapid.IntRange(0, 2).Draw(rt, "client")
				c := clients[i]
				if c == nil {
					return
				}
				// A releasing client gives the lock up before it asks.
				clients[i] = nil
				_ = server(rt).RPC("Variables.Apply", &structs.VariablesApplyRequest{
					Op:  structs.VarOpLockRelease,
					Var: &structs.VariableDecrypted{VariableMetadata: structs.VariableMetadata{Path: path, Lock: &structs.VariableLock{ID: c.id}}},
				}, &structs.VariablesApplyResponse{})
				check(rt)
			},
			"advance": func(rt *rapid.T) {
				clk.Advance(time.Duration(rapid.IntRange(1, 12).Draw(rt, "seconds")) * time.Second)
				check(rt)
			},
			"leader change": func(rt *rapid.T) {
				if leaderChanges == 0 {
					return
				}
				leaderChanges--
				old := sc.WaitForLeader()
				sc.Stop(old)
				sc.WaitForLeaderExcept(old)
				check(rt)
				sc.Restart(old)
				sc.WaitForLeader()
				sc.WaitCaughtUp(old)
				check(rt)
			},
		})
	})
	must.Eq(t, 0, leaderChanges, must.Sprint("the run made its leader changes"))
	t.Logf("%d runs: %d acquires, %d refused, %d renewals", run, acquired, refused, renewed)
	must.Positive(t, acquired)
	must.Positive(t, refused)
	must.Positive(t, renewed)
}

// With tls.rpc, the servers copy root keys to each other (each decrypts
// a variable from its own state) while a caller with a client
// certificate is refused the key material: Keyring.Get is servers only.
func TestServers_TLS_RootKeyServersOnly(t *testing.T) {
	tc := startTLSCluster(t)
	leader := tc.WaitForLeader()
	var reply structs.VariablesApplyResponse
	must.NoError(t, tc.Servers.Servers[leader].RPC("Variables.Apply", &structs.VariablesApplyRequest{
		Op:  structs.VarOpSet,
		Var: &structs.VariableDecrypted{VariableMetadata: structs.VariableMetadata{Path: "tls/v"}, Items: structs.VariableItems{"k": "v"}},
	}, &reply))
	for i, s := range tc.Servers.Servers {
		wait.Poll(t, 15*time.Second, fmt.Sprintf("server %d decrypts", i), func() (bool, string) {
			items, err := staleItems(s, "tls/v")
			if err != nil {
				return false, err.Error()
			}
			return items["k"] == "v", fmt.Sprintf("items %v", items)
		})
	}
	keys, err := tc.Servers.Servers[leader].State().RootKeyMetas(nil)
	must.NoError(t, err)
	must.Len(t, 1, keys)
	var got structs.KeyringGetRootKeyResponse
	err = rpcWith(t, outgoing(t, tc.client), tc.Addr(leader), "Keyring.Get", &structs.KeyringGetRootKeyRequest{KeyID: keys[0].KeyID}, &got)
	must.ErrorIs(t, err, structs.ErrPermissionDenied)
	must.StrContains(t, err.Error(), "Keyring.Get needs a server certificate")
	must.Nil(t, got.Key)
}
