// Package ports hands out TCP (and UDP) ports for agents that end-to-end
// tests start as separate processes.
package ports

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

// handedOut are the ports given out in this test binary, so that no two
// agents are told the same port.
var (
	mu        sync.Mutex
	handedOut = map[int]bool{}
)

// Free picks a random port below the kernel's ephemeral range that is
// free now. Below that range no outgoing connection takes it as its source
// port and no listener on port 0 is given it, so it stays free while the
// agent starts, or is down between a stop and a start on the same port. A
// port from listening on :0 and closing is in that range and is often
// taken again by the time the agent binds it.
func Free(t testing.TB, udpToo bool) int {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
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
