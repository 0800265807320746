package agent

import (
	"net/http"

	"github.com/nomad-edge/nomad/client/allocrunner"
)

// allocChecks handles GET /v1/client/allocation/{alloc}/checks: the
// latest result of each of the allocation's Nomad-native checks, by
// check ID, in upstream's shape (an empty object for an allocation
// without checks, or whose checks have not started).
func (s *HTTPServer) allocChecks(w http.ResponseWriter, r *http.Request, ar *allocrunner.AllocRunner) error {
	return writeJSON(w, ar.CheckResults())
}
