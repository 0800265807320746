package agent

import (
	"net/http"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// systemGC is PUT /v1/system/gc: a forced garbage collection on the
// leader. Upstream answers with an empty body; the official client reads
// nothing from it.
func (s *HTTPServer) systemGC(w http.ResponseWriter, r *http.Request) (any, error) {
	var resp structs.GenericResponse
	if err := s.call(r, "System.GarbageCollect", &structs.GenericRequest{}, &resp); err != nil {
		return nil, err
	}
	setIndex(w, resp.Index)
	return nil, nil
}
