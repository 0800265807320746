package nomad

import (
	"fmt"
	"strings"

	"github.com/hashicorp/go-version"
	"github.com/hashicorp/serf/serf"

	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/nomad/upstreamrpc"
)

// MinDisconnectVersion is the first version whose servers and clients
// implement disconnected clients (the unknown status, reconnect). Older
// servers would treat unknown allocations as they never heard of; older
// clients lack the reconnect path.
var MinDisconnectVersion = version.Must(version.NewVersion("0.1.0"))

// disconnectGate says whether the disconnect windows may be honoured: only
// when every server of the region advertises a version that has the
// feature. Otherwise nodes go down and allocations lost exactly as before,
// and reason says why. A dev server, alone, decides for itself.
func (s *Server) disconnectGate() (ok bool, reason string) {
	if s.serf == nil {
		return versionAtLeast(s.config.Version, MinDisconnectVersion), "this server is older than " + MinDisconnectVersion.String()
	}
	var old []string
	for _, p := range s.regionServers() {
		if p.Status != serf.StatusAlive && p.Status != serf.StatusFailed {
			// A server that left no longer votes on what runs.
			continue
		}
		if !versionAtLeast(p.Build, MinDisconnectVersion) {
			old = append(old, fmt.Sprintf("%s (%s)", p.Name, p.Build))
		}
	}
	if len(old) == 0 {
		return true, ""
	}
	return false, fmt.Sprintf("server(s) %s are older than %s, which introduced disconnected clients", strings.Join(old, ", "), MinDisconnectVersion)
}

// clientSupportsDisconnect says whether a node's client has the reconnect
// path, from the version it advertises; a node that says nothing is taken
// to be old. An upstream client (registered over upstream's protocol) is
// judged by upstream's own numbering.
func clientSupportsDisconnect(n *structs.Node) bool {
	min := MinDisconnectVersion
	if n.Attributes[upstreamrpc.AttrUpstream] != "" {
		min = upstreamrpc.MinDisconnectVersion
	}
	return versionAtLeast(n.Attributes["nomad.version"], min)
}

func versionAtLeast(v string, min *version.Version) bool {
	got, err := version.NewVersion(v)
	if err != nil {
		return false
	}
	return got.Core().GreaterThanOrEqual(min)
}

// disconnectWarning is the registration warning for a job with a
// disconnect window while the gate is closed.
func (s *Server) disconnectWarning(job *structs.Job) string {
	ok, reason := s.disconnectGate()
	if ok {
		return ""
	}
	var groups []string
	for _, tg := range job.TaskGroups {
		if tg.LostAfter() > 0 {
			groups = append(groups, tg.Name)
		}
	}
	if len(groups) == 0 {
		return ""
	}
	return fmt.Sprintf("group(s) %s: the disconnect window is ignored for now: %s; until every server is upgraded, a node that misses its heartbeats goes down and its allocations are lost and replaced",
		strings.Join(groups, ", "), reason)
}
