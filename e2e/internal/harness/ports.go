package harness

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Ports are one agent's listeners.
type Ports struct{ HTTP, RPC, Serf int }

// FreePorts picks ports that are free now for an agent's HTTP and RPC
// listeners (TCP) and serf's gossip (TCP and UDP).
func FreePorts(t testing.TB) Ports {
	t.Helper()
	return Ports{HTTP: FreePort(t), RPC: FreePort(t), Serf: FreeSerfPort(t)}
}

// FreePort picks a TCP port that is free now (see freePort).
func FreePort(t testing.TB) int {
	t.Helper()
	return freePort(t, false)
}

// FreeSerfPort picks a port that is free now for TCP and UDP both, as
// serf's gossip listens on both.
func FreeSerfPort(t testing.TB) int {
	t.Helper()
	return freePort(t, true)
}

// handedOut are the ports given out in this test binary, so that no two
// agents are told the same port.
var (
	portsMu   sync.Mutex
	handedOut = map[int]bool{}
)

// freePort picks a random port below the kernel's ephemeral range that is
// free now. Below that range no outgoing connection takes it as its source
// port and no listener on port 0 is given it, so it stays free while the
// agent starts, or is down between a stop and a start on the same port. A
// port from listening on :0 and closing is in that range and is often
// taken again by the time the agent binds it.
func freePort(t testing.TB, udpToo bool) int {
	t.Helper()
	portsMu.Lock()
	defer portsMu.Unlock()
	low, high := 20000, ephemeralLow()
	if high-low < 1000 {
		low = 1024
	}
	for range 200 {
		port := low + rand.IntN(high-low)
		if handedOut[port] || !free(port, udpToo) {
			continue
		}
		handedOut[port] = true
		return port
	}
	t.Fatalf("no free port on 127.0.0.1 in [%d, %d) after 200 tries", low, high)
	return 0
}

func free(port int, udpToo bool) bool {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return false
	}
	defer l.Close()
	if udpToo {
		u, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			return false
		}
		u.Close()
	}
	return true
}

// ephemeralLow is the first port of the kernel's ephemeral range.
func ephemeralLow() int {
	buf, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(buf)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				return n
			}
		}
	}
	return 32768
}
