package agent

import (
	"fmt"
	"net/http"
	"net/http/pprof"
	"runtime"
	rpprof "runtime/pprof"
	"strconv"
	"strings"

	"github.com/nomad-edge/nomad/acl"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// agentPprof serves the Go runtime's profiles, as upstream's
// /v1/agent/pprof/: profile (CPU) and trace for ?seconds= (1 by default,
// as upstream), cmdline, and the named ones (goroutine, heap, allocs,
// block, mutex, threadcreate) with ?debug= and ?gc= (a GC before a heap
// profile). The named ones are snapshots: they take seconds, as upstream's
// official client sends it to every profile, and return at once, as
// upstream does (Go's own handler would refuse it or wait). With ACLs on
// they need a token with agent:write; with ACLs off, enable_debug. A CPU
// profile of the leader is what says what bounds a cluster figure.
func (s *HTTPServer) agentPprof(w http.ResponseWriter, r *http.Request) (any, error) {
	opts, err := parsePprofOptions(r)
	if err != nil {
		return nil, err
	}
	switch name := strings.Trim(r.PathValue("profile"), "/"); name {
	case "profile", "trace":
		// Go's handlers read seconds themselves; give them the
		// upstream default rather than theirs (30 s for a profile).
		r2 := r.Clone(r.Context())
		q := r2.URL.Query()
		q.Set("seconds", strconv.Itoa(opts.seconds))
		r2.URL.RawQuery = q.Encode()
		r2.Form = nil
		if name == "profile" {
			pprof.Profile(w, r2)
		} else {
			pprof.Trace(w, r2)
		}
	case "cmdline":
		pprof.Cmdline(w, r)
	case "":
		pprof.Index(w, r)
	default:
		p := rpprof.Lookup(name)
		if p == nil {
			return nil, codedErrorf(http.StatusNotFound, "Unknown profile: %s", name)
		}
		if name == "heap" && opts.gc > 0 {
			runtime.GC()
		}
		if opts.debug != 0 {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		} else {
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", name))
		}
		if err := p.WriteTo(w, opts.debug); err != nil {
			s.logger.Debug("writing profile", "profile", name, "error", err)
		}
	}
	return answered{}, nil
}

// pprofOptions are the profile parameters upstream's client sends
// (PprofOptions: seconds, debug, gc).
type pprofOptions struct {
	seconds, debug, gc int
}

// parsePprofOptions reads them; a value that is not a non-negative
// integer is a 400 naming it (upstream reads it as 0).
func parsePprofOptions(r *http.Request) (pprofOptions, error) {
	o := pprofOptions{seconds: 1}
	for name, dst := range map[string]*int{"seconds": &o.seconds, "debug": &o.debug, "gc": &o.gc} {
		v := r.URL.Query().Get(name)
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return o, codedErrorf(http.StatusBadRequest, "Invalid %s %q: must be a non-negative integer", name, v)
		}
		*dst = n
	}
	if o.seconds == 0 {
		o.seconds = 1
	}
	return o, nil
}

func (s *HTTPServer) authorizeDebug(r *http.Request) error {
	if s.aclEnabled() {
		return s.authorize(r, (*acl.ACL).AllowAgentWrite, "agent write")
	}
	return s.debugEnabledWithoutACL(r)
}

// debugEnabledWithoutACL is the node's own check of a profile request a
// server hands it over its session (the server checked the token): with
// ACLs off here, profiles need enable_debug here.
func (s *HTTPServer) debugEnabledWithoutACL(*http.Request) error {
	if s.aclEnabled() {
		return nil
	}
	if s.agent == nil || s.agent.config == nil || !s.agent.config.EnableDebug {
		return fmt.Errorf("%w: profiles are served only with enable_debug = true in the agent config (or with ACLs on, to a token with agent:write)",
			structs.ErrPermissionDenied)
	}
	return nil
}
