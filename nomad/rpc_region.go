package nomad

import (
	"crypto/tls"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/serf/serf"

	"github.com/nomad-edge/nomad/helper/pool"
	"github.com/nomad-edge/nomad/helper/tlsutil"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// Regions federate through serf: the servers of every region share one
// gossip pool (`server join` or retry_join across regions), each tagged with
// its region, while raft, scheduling and state stay inside a region. A
// request names the region it is for (`?region=`, `-region`, a job's
// `region`); a server of another region passes it, unchanged, to a live
// server of that region, which serves it as any request of its own (and
// forwards it to its leader when it must). A region cut off from the others
// keeps serving its own requests; a request for a region the pool cannot
// reach fails with ErrNoRegionPath.

// forwardRegion sends args to a server of the region they name when that is
// not this server's region. handled is true when the call was sent (or no
// server of the region is known: err is then ErrNoRegionPath).
func (s *Server) forwardRegion(method string, args, reply any) (handled bool, err error) {
	r, ok := args.(structs.RegionRequest)
	if !ok {
		return false, nil
	}
	region := r.RequestRegion()
	if region == "" || region == s.config.Region {
		return false, nil
	}
	servers := s.serversOfRegion(region)
	if len(servers) == 0 {
		return true, structs.ErrNoRegionPath
	}
	if s.autoTLSOn() {
		// Each region of tls.auto has a CA of its own, which the other
		// regions' servers neither hold nor trust.
		return true, fmt.Errorf("%w: region %q: tls.auto does not reach other regions (each region's cluster CA is its own); use tls.rpc with certificates of one CA for federated regions", structs.ErrNoRegionPath, region)
	}
	var wait time.Duration
	if q, ok := args.(structs.Queryer); ok {
		wait = q.QueryOpts().BlockingTime()
	}
	p := servers[rand.IntN(len(servers))]
	return true, s.regionPools.get(s, region).RPC(p.RPCAddr.String(), method, args, reply, wait)
}

// regionPools are the connections to the servers of other regions, a pool
// per region. They prove nothing: a server's proof (RPCServerAuth) is of
// its own region's identity, which another region's servers do not hold
// and refuse, and nothing forwarded between regions is server-only: the
// far region authorizes each call by its token, as any caller's. With
// tls.rpc they dial TLS checking the far region's server name
// (server.<region>.nomad).
type regionPools struct {
	mu sync.Mutex
	// pools and closed are guarded by mu.
	pools  map[string]*pool.ConnPool
	closed bool
}

func (r *regionPools) get(s *Server, region string) *pool.ConnPool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := r.pools[region]; p != nil {
		return p
	}
	var conf *tls.Config
	if t := s.tls.outgoingTLS(); t != nil {
		conf = t.Clone()
		conf.ServerName = tlsutil.ServerName(region)
	}
	p := pool.NewPool(pool.Config{Dialer: s.config.Dialer, TLS: conf})
	if r.closed {
		// A call racing the server's shutdown: the pool is shut at once,
		// so the call fails as on a stopped server.
		p.Shutdown()
		return p
	}
	if r.pools == nil {
		r.pools = map[string]*pool.ConnPool{}
	}
	r.pools[region] = p
	return p
}

// shutdown closes every region's pool.
func (r *regionPools) shutdown() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	for _, p := range r.pools {
		p.Shutdown()
	}
	r.pools = nil
}

// serversOfRegion returns the alive servers of region in the gossip pool.
func (s *Server) serversOfRegion(region string) []*serverParts {
	if s.serf == nil {
		return nil
	}
	var out []*serverParts
	for _, m := range s.serf.Members() {
		if p, ok := parseServer(m); ok && p.Region == region && p.Status == serf.StatusAlive {
			out = append(out, p)
		}
	}
	return out
}

// Regions returns the regions with at least one server in the gossip pool
// that has not left it, this server's always among them, sorted (GET /v1/regions).
func (s *Server) Regions() []string {
	out := []string{s.config.Region}
	if s.serf != nil {
		for _, m := range s.serf.Members() {
			if p, ok := parseServer(m); ok && p.Status != serf.StatusLeft && p.Region != "" && !slices.Contains(out, p.Region) {
				out = append(out, p.Region)
			}
		}
	}
	slices.Sort(out)
	return out
}

// Region is the RPC endpoint of the federation's regions.
type Region struct{ srv *Server }

// List answers the regions this server knows (Regions), for agents that are
// not servers (GET /v1/regions on a client).
func (r *Region) List(args *structs.GenericRequest, reply *[]string) error {
	*reply = r.srv.Regions()
	return nil
}
