package agent

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// errCrossOrigin refuses a state-changing request sent by a browser page of
// another origin. A page on any site can make a visitor's browser POST a
// `text/plain` body to http://localhost:4646 without a CORS preflight; if
// the agent accepted it, any web page could register a raw_exec job on the
// machine of whoever reads it. Tools (the CLI, the Go client, curl) send no
// Origin and are unaffected.
var errCrossOrigin = fmt.Errorf("%w: cross-origin request refused", structs.ErrPermissionDenied)

// checkOrigin refuses state-changing requests whose Origin header names a
// host other than the one the request was sent to.
func checkOrigin(r *http.Request) error {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return nil
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		// Browsers also send Sec-Fetch-Site on every request they make.
		if site := r.Header.Get("Sec-Fetch-Site"); site == "cross-site" || site == "same-site" {
			return fmt.Errorf("%w (Sec-Fetch-Site %s)", errCrossOrigin, site)
		}
		return nil
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%w (Origin %q)", errCrossOrigin, origin)
	}
	if !strings.EqualFold(u.Host, r.Host) {
		return fmt.Errorf("%w: Origin %s is not this agent (%s)", errCrossOrigin, origin, r.Host)
	}
	return nil
}
