package structs_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/structs"
)

var allSentinels = []error{
	structs.ErrNotLeader, structs.ErrUnknownJob, structs.ErrUnknownNode, structs.ErrUnknownAlloc,
	structs.ErrUnknownEval, structs.ErrPermissionDenied, structs.ErrNodeNotReady,
	structs.ErrTokenMismatch, structs.ErrMissingField, structs.ErrInvalidRequest,
}

// An error text received over RPC that is a sentinel's text, alone or
// wrapped with ": detail", maps back to that sentinel and keeps its text,
// so callers on the far side of the wire use errors.Is, never strings.
func TestRPCError_SentinelTextMapsBack(t *testing.T) {
	for _, s := range allSentinels {
		t.Run(s.Error(), func(t *testing.T) {
			for _, text := range []string{s.Error(), s.Error() + ": node abc123", fmt.Errorf("%w: %w", s, errors.New("inner")).Error()} {
				err := structs.RPCError(text)
				must.ErrorIs(t, err, s)
				must.EqError(t, err, text)
				for _, other := range allSentinels {
					if other != s {
						must.False(t, errors.Is(err, other), must.Sprintf("%q must not also be %q", text, other))
					}
				}
			}
		})
	}
	must.ErrorIs(t, structs.RPCError("No cluster leader"), structs.ErrNoLeader, must.Sprint("ErrNoLeader is ErrNotLeader"))
}

// Texts that merely resemble a sentinel are plain errors: a message that
// only contains, or runs on from, a sentinel's words is a different error,
// and mapping it would make a caller retry or give up for the wrong reason.
func TestRPCError_OtherTextsDoNotMap(t *testing.T) {
	for _, text := range []string{
		"",
		"rpc: can't find service Test.Nope",
		"job not foundation",            // runs on without ": "
		"lookup failed: node not found", // contains, does not start with
		"Node not found",                // case differs
		"node not found:",               // no detail after the separator
	} {
		err := structs.RPCError(text)
		must.EqError(t, err, text)
		for _, s := range allSentinels {
			must.False(t, errors.Is(err, s), must.Sprintf("%q must not map to %q", text, s))
		}
	}
}

// A ValidationError is an invalid request, so the HTTP layer answers 400
// for every validation failure without knowing the type.
func TestValidationError_IsInvalidRequest(t *testing.T) {
	var err error = &structs.ValidationError{Problems: []string{"Missing job ID"}}
	must.ErrorIs(t, err, structs.ErrInvalidRequest)
	must.False(t, errors.Is(err, structs.ErrUnknownJob))
	must.False(t, errors.Is(err, structs.ErrMissingField))
}

// A validation failure wrapped the way endpoints wrap it crosses the wire
// as text and is still an invalid request on the client, with every
// problem still in the text for `job validate` to show.
func TestValidationError_SurvivesRPCAsInvalidRequest(t *testing.T) {
	verr := &structs.ValidationError{Problems: []string{"Missing job ID", "Task group web validation failed: Missing tasks for task group"}}
	sent := fmt.Errorf("%w: %w", structs.ErrInvalidRequest, verr)

	got := structs.RPCError(sent.Error())
	must.ErrorIs(t, got, structs.ErrInvalidRequest)
	must.EqError(t, got, sent.Error())
	must.StrContains(t, got.Error(), "Missing job ID")
	must.StrContains(t, got.Error(), "Missing tasks for task group")
}

// The text of a ValidationError lists every problem, one per line, so a user
// fixes a job file in one round trip.
func TestValidationError_Text(t *testing.T) {
	must.EqError(t, &structs.ValidationError{}, "invalid")
	must.EqError(t, &structs.ValidationError{Problems: []string{"only one"}}, "only one")
	must.EqError(t, &structs.ValidationError{Problems: []string{"first", "second"}},
		"2 errors occurred:\n\t* first\n\t* second")
}

// The refusals of node RPCs cross the wire as themselves and as
// ErrPermissionDenied: the HTTP layer answers 403 for each, and a client
// can tell a wrong secret from a foreign allocation without reading text.
func TestRPCError_NodeRefusalsAreEachPermissionDenied(t *testing.T) {
	refusals := []error{structs.ErrNodeSecretMissing, structs.ErrNodeSecretMismatch,
		structs.ErrForeignAlloc, structs.ErrServerOnlyStatus}
	for _, r := range refusals {
		t.Run(r.Error(), func(t *testing.T) {
			for _, text := range []string{r.Error(), fmt.Errorf("%w: node abc123", r).Error(), r.Error() + ": allocation a1"} {
				err := structs.RPCError(text)
				must.EqError(t, err, text)
				must.ErrorIs(t, err, structs.ErrPermissionDenied)
				for _, other := range refusals {
					must.Eq(t, other == r, errors.Is(err, other), must.Sprintf("%q is %q?", text, other))
				}
			}
		})
	}
	// Plain permission denied is none of them.
	err := structs.RPCError(structs.ErrPermissionDenied.Error() + ": token expired")
	for _, r := range refusals {
		must.False(t, errors.Is(err, r))
	}
}
