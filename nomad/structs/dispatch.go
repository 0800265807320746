package structs

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// PeriodicForceRequest asks the leader to launch a periodic job now.
type PeriodicForceRequest struct {
	JobID string
	WriteRequest
}

// PeriodicForceResponse names the launched child's evaluation.
type PeriodicForceResponse struct {
	EvalID          string
	EvalCreateIndex uint64
	WriteMeta
}

// JobDispatchRequest asks for a child of a parameterized job.
type JobDispatchRequest struct {
	JobID   string
	Payload []byte
	Meta    map[string]string
	// Priority, when set, is the child's priority instead of the parent's.
	Priority int
	WriteRequest
}

// JobDispatchResponse names the dispatched child and its evaluation.
type JobDispatchResponse struct {
	DispatchedJobID string
	EvalID          string
	EvalCreateIndex uint64
	JobCreateIndex  uint64
	WriteMeta
}

// DispatchedID returns the ID of a child dispatched at now:
// `<parent>/dispatch-<unix seconds>-<8 hex>`, the suffix telling apart
// dispatches of the same second.
func DispatchedID(parentID string, now time.Time) string {
	return fmt.Sprintf("%s%s%d-%s", parentID, DispatchLaunchSuffix, now.Unix(), GenerateUUID()[:8])
}

// ValidateDispatch checks a dispatch's payload and meta against the
// parent's parameterized block; each problem names its key.
func (c *ParameterizedJobConfig) ValidateDispatch(payload []byte, meta map[string]string) error {
	var p problems
	switch {
	case len(payload) > DispatchPayloadSizeLimit:
		p.add("Payload exceeds maximum size; %d > %d", len(payload), DispatchPayloadSizeLimit)
	case c.Payload == DispatchPayloadRequired && len(payload) == 0:
		p.add("Payload is not provided but required by parameterized job")
	case c.Payload == DispatchPayloadForbidden && len(payload) > 0:
		p.add("Payload provided but forbidden by parameterized job")
	}
	var unpermitted []string
	for k := range meta {
		if !slices.Contains(c.MetaRequired, k) && !slices.Contains(c.MetaOptional, k) {
			unpermitted = append(unpermitted, k)
		}
	}
	if len(unpermitted) > 0 {
		sort.Strings(unpermitted)
		p.add("Dispatch request included unpermitted metadata keys: %s", strings.Join(unpermitted, ", "))
	}
	var missing []string
	for _, k := range c.MetaRequired {
		if _, ok := meta[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		p.add("Dispatch did not provide required meta keys: %s", strings.Join(missing, ", "))
	}
	return p.err()
}
