package api

import "net/http"

// System is the handle on cluster maintenance endpoints.
type System struct {
	client *Client
}

// System returns the handle on cluster maintenance endpoints.
func (c *Client) System() *System { return &System{client: c} }

// GarbageCollect asks the servers to collect every finished evaluation,
// allocation, job and down node now, whatever its age
// (PUT /v1/system/gc). It returns once the collection is committed.
func (s *System) GarbageCollect() error {
	_, err := s.client.write(http.MethodPut, "/v1/system/gc", nil, nil, nil)
	return err
}
