package structs

// EmitNodeEventsRequest is Node.EmitEvents: events a client reports about
// its own node (a driver became unhealthy, say), by node ID. AuthToken is
// the node's secret.
type EmitNodeEventsRequest struct {
	NodeEvents map[string][]*NodeEvent
	WriteRequest
}

// EmitNodeEventsResponse is the index the events were written at.
type EmitNodeEventsResponse struct {
	Index uint64
}
