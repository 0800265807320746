package api

// AllocCheckStatus is the latest result of one of an allocation's
// Nomad-native checks, as upstream's.
type AllocCheckStatus struct {
	ID      string
	Check   string
	Group   string
	Task    string
	Service string
	// Status is "success", "failure", "pending" or "warning".
	Status     string
	StatusCode int
	Output     string
	// Mode is "healthiness" or "readiness" (on_update "ignore").
	Mode string
	// Timestamp is in Unix seconds.
	Timestamp int64
}

// AllocCheckStatuses is an allocation's check results by check ID.
type AllocCheckStatuses map[string]AllocCheckStatus

// Checks returns the latest result of each of the allocation's checks,
// from the client that runs it (GET /v1/client/allocation/:id/checks).
func (a *Allocations) Checks(allocID string, q *QueryOptions) (AllocCheckStatuses, error) {
	var resp AllocCheckStatuses
	_, err := a.client.query("/v1/client/allocation/"+pathID(allocID)+"/checks", &resp, q)
	return resp, err
}
