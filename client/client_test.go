package client

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/clienttest"
	"github.com/nomad-edge/nomad/client/state"
	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/helper/clock"
	"github.com/nomad-edge/nomad/helper/clock/clocktest"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil/fault"
)

// testClientOpts tweaks the config newTestClient builds.
type testClientOpts struct {
	db        state.StateDB // default: a fresh MemDB
	stateDir  string        // used when db is nil and useBolt is set
	useBolt   bool
	allocDir  string
	plugins   map[string]map[string]any
	options   map[string]string
	drivers   *drivers.Catalog // default: the built-in drivers
	boot      clock.BootClock  // default: the machine's
	gc        GCConfig
	resources NodeResourcesConfig
	artifact  *ArtifactConfig // default: upstream's limits, a cache under stateDir
	bridge    BridgeNetworkConfig
	upstream  string // Config.UpstreamDataDir
}

// newTestClient starts a client against srv. The caller stops it.
func newTestClient(t testing.TB, srv RPCHandler, o testClientOpts) *Client {
	t.Helper()
	if o.db == nil && !o.useBolt {
		o.db = state.NewMemDB()
	}
	if o.stateDir == "" {
		o.stateDir = t.TempDir()
	}
	if o.allocDir == "" {
		o.allocDir = t.TempDir()
	}
	if o.boot == nil {
		// The machine's boot clock would not follow a synctest bubble's
		// fake time; a boot of its own, as if the machine had rebooted,
		// makes a restarted client measure on the (fake) wall clock.
		o.boot = clocktest.NewBoot(clock.Real(), "boot-"+structs.GenerateUUID())
	}
	c, err := NewClient(&Config{
		Logger:       clienttest.Logger(),
		RPCHandler:   srv,
		StateDir:     o.stateDir,
		AllocDir:     o.allocDir,
		StateDB:      o.db,
		NodeName:     "test-node",
		PluginConfig: o.plugins,
		Options:      o.options,
		Drivers:      o.drivers,
		BootClock:    o.boot,
		Artifact:     o.artifact,
		GC:           o.gc,
		Resources:    o.resources,
		Bridge:       o.bridge,

		UpstreamDataDir: o.upstream,
	})
	must.NoError(t, err)
	return c
}

// waitReady waits for the client to register and heartbeat.
func waitReady(t testing.TB, c *Client) {
	t.Helper()
	select {
	case <-c.Ready():
	case <-time.After(time.Minute):
		t.Fatalf("client not ready after a minute")
	}
}

// TestClient_RegisterAndHeartbeat checks that a client registers, becomes
// ready, and then heartbeats between half and three quarters of the TTL, so
// that a single lost heartbeat is retried before the server's timer fires.
func TestClient_RegisterAndHeartbeat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := clienttest.NewFakeServer()
		defer srv.Close()
		ttl := 10 * time.Second
		srv.SetHeartbeatTTL(ttl)
		c := newTestClient(t, srv, testClientOpts{})
		defer c.Destroy()
		waitReady(t, c)

		node := srv.Node(c.NodeID())
		must.NotNil(t, node)
		must.Eq(t, structs.NodeStatusReady, node.Status)
		must.Eq(t, "1", node.Attributes["driver.mock_driver"])
		must.True(t, node.Drivers["mock_driver"].Healthy)
		must.Positive(t, node.NodeResources.Cpu.CpuShares)
		must.NotEq(t, "", node.SecretID)

		time.Sleep(5 * time.Minute)
		synctest.Wait()
		beats := srv.Heartbeats(c.NodeID())
		must.Greater(t, 40, len(beats))
		for i := 1; i < len(beats); i++ {
			gap := beats[i].Sub(beats[i-1])
			must.True(t, gap >= ttl/2 && gap <= ttl*3/4, must.Sprintf("heartbeat gap %s outside [TTL/2, 3TTL/4]", gap))
		}
		must.Eq(t, beats[len(beats)-1], c.LastHeartbeat().Round(0))
		must.Eq(t, ttl, c.HeartbeatTTL())
	})
}

// TestClient_HeartbeatRetriesAndReregisters checks that failed heartbeats
// are retried with a bounded backoff for as long as the link is down (an LTE
// outage of minutes), that LastHeartbeat keeps the time of the last
// success, and that a server that forgot the node gets it registered again.
func TestClient_HeartbeatRetriesAndReregisters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := clienttest.NewFakeServer()
		defer srv.Close()
		c := newTestClient(t, srv, testClientOpts{})
		defer c.Destroy()
		waitReady(t, c)

		srv.SetError(methodNodeUpdateStatus, errors.New("network unreachable"))
		time.Sleep(10 * time.Second) // let the in-flight interval end
		lastOK := c.LastHeartbeat()
		before := len(srv.Heartbeats(c.NodeID()))
		time.Sleep(3 * time.Minute)
		must.Eq(t, before, len(srv.Heartbeats(c.NodeID())))
		must.Eq(t, lastOK, c.LastHeartbeat())

		srv.SetError(methodNodeUpdateStatus, nil)
		healed := time.Now()
		srv.WaitFor(t, time.Minute, func(v *clienttest.View) (bool, string) {
			return v.Heartbeats(c.NodeID()) > before, "no heartbeat since the link came back"
		})
		synctest.Wait() // the client records the success after the reply
		must.Less(t, heartbeatRetryMax, time.Since(healed))
		must.True(t, c.LastHeartbeat().After(lastOK))

		srv.ForgetNode(c.NodeID())
		srv.WaitFor(t, time.Minute, func(v *clienttest.View) (bool, string) {
			n := v.Node(c.NodeID())
			return n != nil && n.Status == structs.NodeStatusReady, "node not registered again"
		})
		must.Eq(t, 2, srv.Registrations())
	})
}

// TestClient_RegisterRetries checks that a client started while no server
// answers keeps trying and registers once one does: nothing fails merely
// because the link came back before the servers did.
func TestClient_RegisterRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := clienttest.NewFakeServer()
		defer srv.Close()
		srv.SetError(methodNodeRegister, structs.ErrNoLeader)
		c := newTestClient(t, srv, testClientOpts{})
		defer c.Destroy()

		time.Sleep(10 * time.Minute)
		select {
		case <-c.Ready():
			t.Fatal("client ready without a registration")
		default:
		}
		srv.SetError(methodNodeRegister, nil)
		time.Sleep(registerRetryMax)
		select {
		case <-c.Ready():
		default:
			t.Fatalf("client not ready %s after the servers came back", registerRetryMax)
		}
	})
}

// TestClient_NodeIdentityPersisted checks that a restarted client is the
// same node, so that the servers give it back its allocations.
func TestClient_NodeIdentityPersisted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := clienttest.NewFakeServer()
		defer srv.Close()
		dir := t.TempDir()
		c1 := newTestClient(t, srv, testClientOpts{useBolt: true, stateDir: dir})
		waitReady(t, c1)
		id, secret := c1.NodeID(), c1.Node().SecretID
		must.NoError(t, c1.Shutdown())

		c2 := newTestClient(t, srv, testClientOpts{useBolt: true, stateDir: dir})
		defer c2.Destroy()
		waitReady(t, c2)
		must.Eq(t, id, c2.NodeID())
		must.Eq(t, secret, c2.Node().SecretID)
	})
}

// TestClient_ConfigErrors checks that a plugin block for a driver that does
// not exist is refused rather than ignored.
func TestClient_ConfigErrors(t *testing.T) {
	_, err := NewClient(&Config{
		RPCHandler:   clienttest.NewFakeServer(),
		StateDB:      state.NewMemDB(),
		AllocDir:     t.TempDir(),
		PluginConfig: map[string]map[string]any{"raw_exek": {"enabled": true}},
	})
	must.ErrorContains(t, err, "raw_exek")

	_, err = NewClient(&Config{StateDB: state.NewMemDB(), AllocDir: t.TempDir()})
	must.ErrorContains(t, err, "RPCHandler")
}

// TestClient_ShutdownCancelsStalledCalls checks that Shutdown ends the
// calls in flight to a server that stopped answering (the blocking
// allocation watch, a heartbeat) through their context, rather than
// waiting for them: a client stopped during an outage must stop at once,
// and leave no call behind.
func TestClient_ShutdownCancelsStalledCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := clienttest.NewFakeServer()
		defer srv.Close()
		c := newTestClient(t, srv, testClientOpts{})
		waitReady(t, c)

		srv.Cut(fault.Stall)
		time.Sleep(time.Minute) // heartbeats and the watch now hang on the server
		synctest.Wait()

		done := make(chan error, 1)
		go func() { done <- c.Destroy() }()
		synctest.Wait()
		select {
		case err := <-done:
			must.NoError(t, err)
		default:
			t.Fatal("Shutdown waits for the calls the stalled server holds")
		}
	})
}
