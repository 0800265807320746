package api

import (
	"fmt"
	"net/http"
)

// UnexpectedResponseError is returned for every non-2xx answer from the
// agent. Callers branch on the status with errors.As, never on the text:
//
//	var ure *api.UnexpectedResponseError
//	if errors.As(err, &ure) && ure.StatusCode == http.StatusNotFound { ... }
type UnexpectedResponseError struct {
	// StatusCode is the HTTP status of the answer.
	StatusCode int
	// Body is the answer's body, whitespace-trimmed and capped at 64 KiB;
	// the agent puts its human-readable error message there.
	Body string
	// Method and Path identify the request, for logs.
	Method string
	Path   string
}

// Error reads like upstream's ("Unexpected response code: 404 (job not
// found)") because operators paste it into searches and scripts grep it.
func (e *UnexpectedResponseError) Error() string {
	if e.Body == "" {
		return fmt.Sprintf("Unexpected response code: %d (%s)", e.StatusCode, http.StatusText(e.StatusCode))
	}
	return fmt.Sprintf("Unexpected response code: %d (%s)", e.StatusCode, e.Body)
}

// IsNotFound reports whether the agent answered 404, the usual "no such
// job/alloc/node/eval" case the CLI turns into a friendly message.
func (e *UnexpectedResponseError) IsNotFound() bool {
	return e.StatusCode == http.StatusNotFound
}
