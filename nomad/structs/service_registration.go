package structs

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Statuses of a service registration. Upstream's registrations have no
// status: an instance on a node that stopped heartbeating is listed as if
// nothing happened until its allocation is lost. Ours says when the
// allocation is unknown, so a consumer can tell it from a healthy one (see
// website/content/docs/concepts/disconnected-clients.md).
const (
	// ServiceRegistrationStatusActive is an instance whose allocation the
	// servers hear from.
	ServiceRegistrationStatusActive = "active"
	// ServiceRegistrationStatusUnknown is an instance whose allocation is
	// unknown (its node is disconnected): left out of a service lookup
	// unless asked for.
	ServiceRegistrationStatusUnknown = "unknown"
)

// ErrUnknownServiceRegistration names a registration that does not exist.
var ErrUnknownServiceRegistration = errors.New("service registration not found")

// ServiceRegistration is one instance of a service in the catalog: the
// address and port of one allocation's service, written by the client that
// runs it. Field names are upstream's; Status is ours.
type ServiceRegistration struct {
	// ID is unique per allocation and service: the client derives it as
	// _nomad-task-<alloc>-<group or task>-<name>-<port>, as upstream.
	ID          string
	ServiceName string
	Namespace   string
	NodeID      string
	Datacenter  string
	JobID       string
	AllocID     string
	Tags        []string
	Address     string
	Port        int
	// Status is ServiceRegistrationStatusActive or ...Unknown; the state
	// store sets it from the allocation's client status, in the same
	// transaction as the allocation changes.
	Status      string
	CreateIndex uint64
	ModifyIndex uint64
}

// Copy returns a deep copy.
func (s *ServiceRegistration) Copy() *ServiceRegistration {
	if s == nil {
		return nil
	}
	c := *s
	c.Tags = slices.Clone(s.Tags)
	return &c
}

// Equal reports whether s and o register the same instance the same way,
// indexes and status aside: a client re-registering what the servers have
// writes nothing.
func (s *ServiceRegistration) Equal(o *ServiceRegistration) bool {
	if s == nil || o == nil {
		return s == o
	}
	return s.ID == o.ID && s.ServiceName == o.ServiceName && s.Namespace == o.Namespace &&
		s.NodeID == o.NodeID && s.Datacenter == o.Datacenter && s.JobID == o.JobID &&
		s.AllocID == o.AllocID && slices.Equal(s.Tags, o.Tags) && s.Address == o.Address && s.Port == o.Port
}

// Validate checks what the client must fill in.
func (s *ServiceRegistration) Validate() error {
	var p problems
	for _, f := range []struct{ name, v string }{
		{"ID", s.ID}, {"ServiceName", s.ServiceName}, {"Namespace", s.Namespace},
		{"NodeID", s.NodeID}, {"JobID", s.JobID}, {"AllocID", s.AllocID},
	} {
		if f.v == "" {
			p.add("service registration is missing %s", f.name)
		}
	}
	if s.Port < 0 || s.Port > 65535 {
		p.add("service registration port %d is out of range 0-65535", s.Port)
	}
	return p.err()
}

// HashWith is the instance's rank for key in a rendezvous (highest random
// weight) choice: the same key ranks the same instances first for every
// caller, and removing an instance moves only the keys it held.
func (s *ServiceRegistration) HashWith(key string) string {
	h := sha256.New()
	for _, part := range []string{key, s.ID, s.ServiceName, s.AllocID, s.Address, strconv.Itoa(s.Port)} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ChooseServices returns the n instances that rank first for key (all of
// them when there are fewer), from choose as the HTTP API takes it:
// "<n>|<key>", as upstream.
func ChooseServices(regs []*ServiceRegistration, choose string) ([]*ServiceRegistration, error) {
	num, key, ok := strings.Cut(choose, "|")
	n, err := strconv.Atoi(num)
	if !ok || err != nil || n < 1 || key == "" {
		return nil, fmt.Errorf("%w: choose %q must be <number>|<key>, a number of instances of at least 1 and a key", ErrInvalidRequest, choose)
	}
	type ranked struct {
		hash string
		reg  *ServiceRegistration
	}
	all := make([]ranked, len(regs))
	for i, r := range regs {
		all[i] = ranked{r.HashWith(key), r}
	}
	slices.SortStableFunc(all, func(a, b ranked) int { return strings.Compare(a.hash, b.hash) })
	out := make([]*ServiceRegistration, 0, min(n, len(all)))
	for _, r := range all[:min(n, len(all))] {
		out = append(out, r.reg)
	}
	return out, nil
}

// ServiceRegistrationStub is a service name and the union of its
// instances' tags, as GET /v1/services lists them.
type ServiceRegistrationStub struct {
	ServiceName string
	Tags        []string
}

// ServiceRegistrationListStub is one namespace's services.
type ServiceRegistrationListStub struct {
	Namespace string
	Services  []*ServiceRegistrationStub
}

// ServiceRegistrationUpsertRequest writes registrations; a client sends
// those of its own allocations, authenticated by its node's secret.
type ServiceRegistrationUpsertRequest struct {
	Services []*ServiceRegistration
	// NodeID is the writing node, whose secret is AuthToken.
	NodeID string
	WriteRequest
}

// ServiceRegistrationUpsertResponse answers an upsert.
type ServiceRegistrationUpsertResponse struct {
	WriteMeta
}

// ServiceRegistrationDeleteByIDRequest deletes one registration, by an
// operator (submit-job) or by the node it is on (its secret).
type ServiceRegistrationDeleteByIDRequest struct {
	ID string
	// NodeID, with its secret as AuthToken, lets a client delete its own
	// allocation's registration without an ACL token.
	NodeID string
	WriteRequest
}

// ServiceRegistrationDeleteByIDResponse answers a delete.
type ServiceRegistrationDeleteByIDResponse struct {
	WriteMeta
}

// ServiceRegistrationListRequest lists services per namespace
// (AllNamespaces "*" for every one the caller may read).
type ServiceRegistrationListRequest struct {
	QueryOptions
}

// ServiceRegistrationListResponse answers a list.
type ServiceRegistrationListResponse struct {
	Services []*ServiceRegistrationListStub
	QueryMeta
}

// ServiceRegistrationByNameRequest reads a service's instances.
type ServiceRegistrationByNameRequest struct {
	ServiceName string
	// IncludeUnknown also returns instances whose allocation is unknown
	// (ours; upstream has no such instances to leave out).
	IncludeUnknown bool
	QueryOptions
}

// ServiceRegistrationByNameResponse answers a read by name.
type ServiceRegistrationByNameResponse struct {
	Services []*ServiceRegistration
	QueryMeta
}

// ServiceRegistrationsRequest reads the registrations of one allocation
// (ServiceRegistration.ListByAlloc) or one job (ServiceRegistration.ListByJob,
// in the request's namespace).
type ServiceRegistrationsRequest struct {
	ID string
	QueryOptions
}

// ServiceRegistrationsResponse answers it; Services is nil when the
// allocation or job does not exist.
type ServiceRegistrationsResponse struct {
	Services []*ServiceRegistration
	QueryMeta
}
