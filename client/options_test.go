package client

import (
	"errors"
	"maps"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/clienttest"
	"github.com/nomad-edge/nomad/drivers"
)

// ParseOptions reads the keys it honours (and upstream's deprecated
// spellings), fills upstream's user defaults, and refuses by name every
// other key and every driver name that does not exist: an option accepted
// without effect is what the operator must never get.
func TestParseOptions(t *testing.T) {
	known := []string{"exec", "mock_driver", "raw_exec"}

	o, err := ParseOptions(nil, known)
	must.NoError(t, err)
	must.Nil(t, o.DriverAllowlist)
	must.Eq(t, map[string]bool{"root": true, "Administrator": true}, o.Users.Denylist)
	must.Eq(t, map[string]bool{"exec": true, "qemu": true, "java": true}, o.Users.CheckedDrivers)

	o, err = ParseOptions(map[string]string{
		"driver.allowlist": "exec, mock_driver", "driver.blacklist": "raw_exec",
		"user.denylist": "", "user.checked_drivers": "raw_exec",
	}, known)
	must.NoError(t, err)
	must.Eq(t, []string{"exec", "mock_driver"}, o.DriverAllowlist)
	must.Eq(t, []string{"raw_exec"}, o.DriverDenylist)
	must.Eq(t, map[string]bool{}, o.Users.Denylist, must.Sprint("an empty denylist set on purpose denies no one"))
	must.Eq(t, map[string]bool{"raw_exec": true}, o.Users.CheckedDrivers)
	must.True(t, o.offers("exec"))
	must.False(t, o.offers("raw_exec"))

	_, err = ParseOptions(map[string]string{"driver.denylist": "raw-exec"}, known)
	must.ErrorContains(t, err, `client.options: driver.denylist names driver "raw-exec", which does not exist (known: exec, mock_driver, raw_exec)`)

	_, err = ParseOptions(map[string]string{"fingerprint.denylist": "network", "drivr.allowlist": "exec"}, known)
	must.True(t, errors.Is(err, ErrUnknownOption))
	must.ErrorContains(t, err, `client.options: "fingerprint.denylist" is not supported by this version`)
	must.ErrorContains(t, err, `client.options: unknown option "drivr.allowlist" (this version reads driver.allowlist, driver.blacklist, driver.denylist, driver.whitelist, user.blacklist, user.checked_drivers, user.denylist)`)
}

// driver.denylist = "raw_exec" stops the client offering raw_exec: it is
// neither fingerprinted nor registered on the node, and the client has no
// such driver to start a task with; driver.allowlist keeps only the drivers
// it names.
func TestClient_DriverAllowAndDenyLists(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := clienttest.NewFakeServer()
		defer srv.Close()
		enabled := map[string]map[string]any{"raw_exec": {"enabled": true}}

		c := newTestClient(t, srv, testClientOpts{plugins: enabled})
		waitReady(t, c)
		must.MapContainsKey(t, srv.Node(c.NodeID()).Drivers, "raw_exec", must.Sprint("raw_exec must be offered without a denylist, or the test proves nothing"))
		must.NoError(t, c.Destroy())

		c = newTestClient(t, srv, testClientOpts{plugins: enabled, options: map[string]string{"driver.denylist": "raw_exec"}})
		defer c.Destroy()
		waitReady(t, c)
		node := srv.Node(c.NodeID())
		must.MapNotContainsKey(t, node.Drivers, "raw_exec")
		must.MapNotContainsKey(t, node.Attributes, "driver.raw_exec")
		must.MapContainsKey(t, node.Drivers, "mock_driver")
		_, err := c.Driver("raw_exec")
		must.ErrorIs(t, err, drivers.ErrUnknownDriver)

		a := newTestClient(t, srv, testClientOpts{plugins: enabled, options: map[string]string{"driver.allowlist": "mock_driver"}})
		defer a.Destroy()
		waitReady(t, a)
		must.Eq(t, []string{"mock_driver"}, slices.Sorted(maps.Keys(srv.Node(a.NodeID()).Drivers)))
	})
}
