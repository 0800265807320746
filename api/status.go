package api

// Status is the handle on the cluster status endpoints.
type Status struct {
	client *Client
}

// Status returns the handle on the cluster status endpoints.
func (c *Client) Status() *Status { return &Status{client: c} }

// Leader returns the RPC address of the current leader
// (GET /v1/status/leader), as the leader answers it; while the cluster has
// none the agent holds the request and then answers an error.
func (s *Status) Leader() (string, error) {
	var leader string
	if _, err := s.client.query("/v1/status/leader", &leader, nil); err != nil {
		return "", err
	}
	return leader, nil
}

// RegionLeader returns the RPC address of the leader of region, answered by
// a server of that region (GET /v1/status/leader?region=).
func (s *Status) RegionLeader(region string) (string, error) {
	var leader string
	if _, err := s.client.query("/v1/status/leader", &leader, &QueryOptions{Region: region}); err != nil {
		return "", err
	}
	return leader, nil
}

// Peers returns the RPC addresses of the raft peers (GET /v1/status/peers).
func (s *Status) Peers() ([]string, error) {
	var peers []string
	if _, err := s.client.query("/v1/status/peers", &peers, nil); err != nil {
		return nil, err
	}
	return peers, nil
}
