package agent

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	sockaddr "github.com/hashicorp/go-sockaddr"
	"golang.org/x/sys/unix"

	"github.com/nomad-edge/nomad/acl"
	"github.com/nomad-edge/nomad/helper/mounts"
)

// HostData is what GET /v1/agent/host says of the agent's host, in
// upstream's shape (api.HostData): for an operator's debug bundle, not
// for the scheduler.
type HostData struct {
	OS          string
	Network     []map[string]string
	ResolvConf  string
	Hosts       string
	Environment map[string]string
	Disk        map[string]DiskUsage
}

// DiskUsage is one mount's size and use, in MiB.
type DiskUsage struct {
	DiskMB int64
	UsedMB int64
}

// HostDataResponse is the answer for an agent named by ?node_id= or
// ?server_id= (upstream's api.HostDataResponse); a request naming none
// gets the HostData alone, as upstream's.
type HostDataResponse struct {
	AgentID  string
	HostData *HostData `json:",omitempty"`
}

// hostFileLimit bounds what is read of /etc/hosts and /etc/resolv.conf.
const hostFileLimit = 1 << 20

// statfsTimeout bounds the wait for one mount's statfs: a hung network
// mount is left out rather than hanging the request.
const statfsTimeout = 2 * time.Second

// agentHost handles GET /v1/agent/host (agent:read, as upstream), for
// this agent or, forwarded, the one ?node_id= or ?server_id= names.
func (s *HTTPServer) agentHost(_ http.ResponseWriter, r *http.Request) (any, error) {
	data, err := collectHostData()
	if err != nil {
		return nil, err
	}
	t, err := parseAgentTarget(r)
	if err != nil {
		return nil, err
	}
	if id := t.id(); id != "" {
		return HostDataResponse{AgentID: id, HostData: data}, nil
	}
	return data, nil
}

// collectHostData reads the host's uname, addresses, resolver and hosts
// files, environment (values of names holding "token" or "secret"
// redacted, as upstream) and mounts.
func collectHostData() (*HostData, error) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return nil, fmt.Errorf("uname: %w", err)
	}
	h := &HostData{
		// upstream's order: machine, node name, release, system, version
		OS: strings.Join([]string{unix.ByteSliceToString(u.Machine[:]), unix.ByteSliceToString(u.Nodename[:]),
			unix.ByteSliceToString(u.Release[:]), unix.ByteSliceToString(u.Sysname[:]), unix.ByteSliceToString(u.Version[:])}, " "),
		Network:     hostNetwork(),
		ResolvConf:  readHostFile("/etc/resolv.conf"),
		Hosts:       readHostFile("/etc/hosts"),
		Environment: hostEnvironment(os.Environ()),
		Disk:        hostDisks(),
	}
	return h, nil
}

// hostNetwork lists every interface address with go-sockaddr's attributes
// of it, as upstream's.
func hostNetwork() []map[string]string {
	ifAddrs, err := sockaddr.GetAllInterfaces()
	if err != nil {
		return []map[string]string{}
	}
	out := make([]map[string]string, 0, len(ifAddrs))
	for _, ifa := range ifAddrs {
		m := map[string]string{}
		names := append(append([]sockaddr.AttrName{}, sockaddr.SockAddrAttrs()...), sockaddr.IPAttrs()...)
		switch ifa.SockAddr.Type() {
		case sockaddr.TypeIPv4:
			names = append(names, sockaddr.IPv4Attrs()...)
		case sockaddr.TypeIPv6:
			names = append(names, sockaddr.IPv6Attrs()...)
		}
		for _, n := range names {
			if v, err := sockaddr.Attr(ifa.SockAddr, n); err == nil && v != "" {
				m[string(n)] = v
			}
		}
		for name, args := range map[string]func() (string, string){
			"DialPacket": ifa.SockAddr.DialPacketArgs, "DialStream": ifa.SockAddr.DialStreamArgs,
			"ListenPacket": ifa.SockAddr.ListenPacketArgs, "ListenStream": ifa.SockAddr.ListenStreamArgs,
		} {
			network, addr := args()
			m[name] = fmt.Sprintf("%+q %+q", network, addr)
		}
		out = append(out, m)
	}
	return out
}

// readHostFile returns a bounded read of path, "" when it cannot be read.
func readHostFile(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, hostFileLimit))
	return string(b)
}

// hostEnvironment is env as a map, with the value of every variable whose
// name holds "token" or "secret" (any case) replaced by "<redacted>".
func hostEnvironment(env []string) map[string]string {
	out := make(map[string]string, len(env))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		lk := strings.ToLower(k)
		if strings.Contains(lk, "token") || strings.Contains(lk, "secret") {
			v = "<redacted>"
		}
		out[k] = v
	}
	return out
}

// pseudoFS are the kernel's file systems that hold no data of the host's;
// their mounts are not listed (upstream leaves out proc, sysfs, devtmpfs,
// devpts, tmpfs and cgroup v1 too).
var pseudoFS = map[string]bool{
	"proc": true, "sysfs": true, "devtmpfs": true, "devpts": true, "tmpfs": true, "cgroup": true,
	"securityfs": true, "debugfs": true, "tracefs": true, "mqueue": true, "pstore": true, "bpf": true,
	"autofs": true, "binfmt_misc": true, "hugetlbfs": true, "configfs": true, "fusectl": true,
	"rpc_pipefs": true, "efivarfs": true, "ramfs": true,
}

// hostDisks is the size and use of every mount the mount table lists but
// the pseudo file systems'.
func hostDisks() map[string]DiskUsage {
	out := map[string]DiskUsage{}
	for _, m := range mounts.Table() {
		if pseudoFS[m.FSType] {
			continue
		}
		if u, ok := statfsWithin(m.Point, statfsTimeout); ok {
			out[m.Point] = u
		}
	}
	return out
}

// statfsWithin is the mount's usage, false when statfs fails or does not
// answer within d.
func statfsWithin(path string, d time.Duration) (DiskUsage, bool) {
	type result struct {
		u  DiskUsage
		ok bool
	}
	ch := make(chan result, 1)
	go func() {
		var st unix.Statfs_t
		if err := unix.Statfs(path, &st); err != nil {
			ch <- result{}
			return
		}
		bs := uint64(st.Bsize)
		ch <- result{u: DiskUsage{
			DiskMB: int64(st.Blocks * bs >> 20),
			UsedMB: int64((st.Blocks - st.Bfree) * bs >> 20),
		}, ok: true}
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case r := <-ch:
		return r.u, r.ok
	case <-t.C:
		return DiskUsage{}, false
	}
}

// allowHost is /v1/agent/host's ACL: agent:read.
var allowHost = (*acl.ACL).AllowAgentRead
