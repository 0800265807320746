package agent

import (
	"fmt"
	"net/http"
	"net/http/pprof"
	"strings"

	"github.com/nomad-edge/nomad/acl"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// agentPprof serves the Go runtime's profiles, as upstream's
// /v1/agent/pprof/: profile (CPU, ?seconds=), trace, cmdline, and the
// named ones (goroutine, heap, allocs, block, mutex, threadcreate). With
// ACLs on they need a token with agent:write; with ACLs off, enable_debug.
// A CPU profile of the leader is what says what bounds a cluster figure.
func (s *HTTPServer) agentPprof() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := checkOrigin(r); err != nil {
			s.writeError(w, r, err)
			return
		}
		if err := s.authorizeDebug(r); err != nil {
			s.writeError(w, r, err)
			return
		}
		switch name := strings.Trim(r.PathValue("profile"), "/"); name {
		case "profile":
			pprof.Profile(w, r)
		case "trace":
			pprof.Trace(w, r)
		case "cmdline":
			pprof.Cmdline(w, r)
		case "":
			pprof.Index(w, r)
		default:
			pprof.Handler(name).ServeHTTP(w, r)
		}
	})
}

func (s *HTTPServer) authorizeDebug(r *http.Request) error {
	if s.aclEnabled() {
		return s.authorize(r, (*acl.ACL).AllowAgentWrite, "agent write")
	}
	if s.agent == nil || s.agent.config == nil || !s.agent.config.EnableDebug {
		return fmt.Errorf("%w: profiles are served only with enable_debug = true in the agent config (or with ACLs on, to a token with agent:write)",
			structs.ErrPermissionDenied)
	}
	return nil
}
