// Package fault is the one vocabulary the tests use to fail links: how a
// link fails (Mode), what a call over a failed link returns
// (ErrPartitioned), and the two shapes a fault injector has. A Net is a
// network of named hosts, every link of one of which a test isolates and
// heals (testutil.MemNet, by IP; testutil.FaultNet on loopback, by RPC
// address). A Link is one party's way to another, which a test cuts and
// heals (testutil.FaultableRPC, a client's link to the servers;
// clienttest.FakeServer, the fake server's link to its one client); both
// keep their fault state in a Switch, so a cut fails their calls alike.
//
// It imports only helper/pool, for the transport error a client retries,
// so the client's and the drivers' tests can use it as the server's can.
package fault

import (
	"fmt"

	"github.com/nomad-edge/nomad/helper/pool"
)

// Mode is how a failed link fails.
type Mode int

const (
	// Healthy passes everything through.
	Healthy Mode = iota
	// Blackhole drops what is sent, as a route that loses packets does:
	// calls and dials hang until their own deadline (or the heal), then
	// fail; what was in flight is lost.
	Blackhole
	// Reset refuses at once, as a closed port does: open connections are
	// closed, calls and dials fail.
	Reset
	// Stall holds what is sent without failing it, as TCP retransmitting
	// over a short outage does: calls wait, unanswered, until the heal,
	// then go through.
	Stall
)

// String names the mode as the tests' messages do.
func (m Mode) String() string {
	switch m {
	case Healthy:
		return "healthy"
	case Blackhole:
		return "blackhole"
	case Reset:
		return "reset"
	case Stall:
		return "stall"
	}
	return fmt.Sprintf("fault.Mode(%d)", int(m))
}

// ErrPartitioned is what a call or dial over a failed link returns. It is
// a transport error, as a dead link is to the client's real RPC handler,
// so the client retries it as it would a real partition.
var ErrPartitioned = fmt.Errorf("link partitioned: %w", pool.ErrTransport)

// Net is a network of named hosts whose links a test fails.
type Net interface {
	// Isolate fails every link to and from host in mode m, until Heal.
	Isolate(host string, m Mode)
	// Heal restores host's links; new dials and calls go through.
	Heal(host string)
}

// Link is one party's way to another, which a test fails.
type Link interface {
	// Cut fails the link in mode m, the calls in flight included (a
	// blocking query loses its connection), until Heal.
	Cut(m Mode)
	// Heal restores the link.
	Heal()
}
