package client

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/clienttest"
)

// Applied metadata survives a restart of the client (it is in the state
// database, bolt here) and the restarted client registers with it: an
// edge device that reboots while cut off keeps the tags it was given.
func TestClient_NodeMetaPersisted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := clienttest.NewFakeServer()
		defer srv.Close()
		dir := t.TempDir()
		c1 := newTestClient(t, srv, testClientOpts{useBolt: true, stateDir: dir})
		waitReady(t, c1)
		v := "blue"
		_, err := c1.ApplyNodeMeta(map[string]*string{"color": &v, "gone": nil})
		must.NoError(t, err)
		srv.WaitFor(t, time.Minute, func(view *clienttest.View) (bool, string) {
			return view.Node(c1.NodeID()).Meta["color"] == "blue", "meta not pushed"
		})
		must.NoError(t, c1.Shutdown())

		c2 := newTestClient(t, srv, testClientOpts{useBolt: true, stateDir: dir})
		defer c2.Destroy()
		waitReady(t, c2)
		got := c2.NodeMeta()
		must.Eq(t, "blue", got.Meta["color"])
		must.Eq(t, map[string]*string{"color": &v, "gone": nil}, got.Dynamic)
		must.Eq(t, "blue", srv.Node(c2.NodeID()).Meta["color"])
	})
}
