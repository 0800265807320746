package structs

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors shared across RPC boundaries. The RPC layer carries the
// error text; RPCError maps a known text back to its sentinel so callers can
// use errors.Is instead of matching strings.
//
// The capitalised texts are upstream's: they cross the wire, and clients
// written against upstream Nomad print or match them.
var (
	//lint:ignore ST1005 upstream's text, seen by clients
	ErrNotLeader    = errors.New("No cluster leader")
	ErrNoLeader     = ErrNotLeader
	ErrUnknownJob   = errors.New("job not found")
	ErrUnknownNode  = errors.New("node not found")
	ErrUnknownAlloc = errors.New("alloc not found")
	ErrUnknownEval  = errors.New("eval not found")
	// ErrUnknownDeployment names a deployment that does not exist.
	ErrUnknownDeployment = errors.New("deployment not found")
	//lint:ignore ST1005 upstream's text, seen by clients
	ErrPermissionDenied = errors.New("Permission denied")
	ErrNodeNotReady     = errors.New("node is not ready for updates")
	ErrTokenMismatch    = errors.New("evaluation token does not match")
	ErrMissingField     = errors.New("missing required field")
	ErrInvalidRequest   = errors.New("invalid request")
	// ErrServerShutdown answers calls that reach a server while it stops;
	// a client tries another server.
	ErrServerShutdown = errors.New("server shutting down")
	// ErrNoRegionPath answers a request for a region no server of the
	// federation (serf's pool) is known in, or none of whose servers is
	// alive.
	//lint:ignore ST1005 upstream's text, seen by clients
	ErrNoRegionPath = errors.New("No path to region")
)

// Refusals of a node RPC. Each is an ErrPermissionDenied, so the HTTP API
// answers 403 and a caller that only asks "was I refused?" need not know
// them all.
var (
	ErrNodeSecretMissing  = fmt.Errorf("%w: missing node secret ID", ErrPermissionDenied)
	ErrNodeSecretMismatch = fmt.Errorf("%w: node secret ID does not match", ErrPermissionDenied)
	ErrForeignAlloc       = fmt.Errorf("%w: allocation is not on the reporting node", ErrPermissionDenied)
	ErrServerOnlyStatus   = fmt.Errorf("%w: status is set only by the servers", ErrPermissionDenied)
	// ErrNodeCertRefused is why a node gets no certificate of tls.auto:
	// unknown or purged node, a certificate not of this cluster or not
	// the node's, or one that expired outside the node's disconnect
	// window.
	ErrNodeCertRefused = fmt.Errorf("%w: node certificate refused", ErrPermissionDenied)
)

// ErrScalingBlocked refuses a count change of a job whose deployment is
// still active (upstream's text, a 400); PolicyOverride goes past it.
var ErrScalingBlocked error = &refusal{msg: "job scaling blocked due to active deployment", kind: ErrInvalidRequest}

// refusal is a sentinel with its own text (upstream's, matched by clients)
// that is also one of the general kinds above, so the HTTP API answers it
// with that kind's status code.
type refusal struct {
	msg  string
	kind error
}

func (r *refusal) Error() string        { return r.msg }
func (r *refusal) Is(target error) bool { return target == r.kind }

// sentinels is searched in order: the refusals above come before
// ErrPermissionDenied, whose text they start with.
var sentinels = []error{
	ErrNodeSecretMissing, ErrNodeSecretMismatch, ErrForeignAlloc, ErrServerOnlyStatus, ErrScalingBlocked,
	ErrNodeCertRefused,
	ErrIntroductionRequired,
	ErrScalingUnstable,
	ErrJobRegistrationDisabled, ErrEvalBrokerNotPaused,
	ErrTokenNotFound, ErrTokenExpired, ErrOneTimeTokenInvalid, ErrACLBootstrapped, ErrACLDisabled, ErrUnknownACLToken, ErrUnknownACLPolicy,
	ErrUnknownNamespace, ErrUnknownNodePool, ErrUnknownServiceRegistration,
	ErrVariableTooLarge, ErrVariableNotFound, ErrLockConflict, ErrUnknownRootKey,
	ErrNotLeader, ErrUnknownJob, ErrUnknownNode, ErrUnknownAlloc, ErrUnknownEval, ErrUnknownDeployment,
	ErrPermissionDenied, ErrNodeNotReady, ErrTokenMismatch, ErrMissingField, ErrInvalidRequest,
	ErrUnknownPeer, ErrServerShutdown, ErrNoRegionPath,
}

// RPCError turns an error string received over RPC back into an error that
// wraps the matching sentinel, so errors.Is works on the far side of the wire.
// The comparison is done once, here, rather than by every caller.
func RPCError(msg string) error {
	for _, s := range sentinels {
		if msg == s.Error() || strings.HasPrefix(msg, s.Error()+": ") {
			return &wireError{msg: msg, sentinel: s}
		}
	}
	return errors.New(msg)
}

type wireError struct {
	msg      string
	sentinel error
}

func (e *wireError) Error() string { return e.msg }
func (e *wireError) Unwrap() error { return e.sentinel }

// ValidationError lists every problem found in an object at once, so a user
// fixes a job file in one round trip.
type ValidationError struct {
	Problems []string
}

func (v *ValidationError) Error() string {
	switch len(v.Problems) {
	case 0:
		return "invalid"
	case 1:
		return v.Problems[0]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d errors occurred:", len(v.Problems))
	for _, p := range v.Problems {
		b.WriteString("\n\t* ")
		b.WriteString(p)
	}
	return b.String()
}

// Is makes every ValidationError match ErrInvalidRequest.
func (v *ValidationError) Is(target error) bool { return target == ErrInvalidRequest }

// problems accumulates validation messages.
type problems []string

func (p *problems) add(format string, args ...any) { *p = append(*p, fmt.Sprintf(format, args...)) }

// addErr adds each problem of a nested validation as its own entry under
// prefix, so every line of a job's error names its group and task; any
// other error is added as its text.
func (p *problems) addErr(prefix string, err error) {
	var v *ValidationError
	if errors.As(err, &v) && len(v.Problems) > 0 {
		for _, msg := range v.Problems {
			*p = append(*p, prefix+msg)
		}
		return
	}
	*p = append(*p, prefix+err.Error())
}

func (p problems) err() error {
	if len(p) == 0 {
		return nil
	}
	return &ValidationError{Problems: p}
}
