package structs

import (
	"errors"
	"fmt"
	"regexp"
)

// ErrUnknownNamespace answers a read or delete of a namespace that does
// not exist.
var ErrUnknownNamespace = errors.New("namespace not found")

// DefaultNamespaceDescription is the description of the namespace that
// always exists (upstream's text).
const DefaultNamespaceDescription = "Default shared namespace"

// maxNamespaceDescription bounds a namespace's description, as upstream.
const maxNamespaceDescription = 256

var validNamespaceName = regexp.MustCompile(`^[a-zA-Z0-9-]{1,128}$`)

// Namespace groups jobs (and what they own) under one name that ACL
// policies grant capabilities on. The "default" namespace always exists.
type Namespace struct {
	Name        string
	Description string
	// Quota names a resource quota, an upstream Enterprise feature: a
	// namespace that sets it is refused rather than stored unenforced.
	Quota       string
	Meta        map[string]string
	CreateIndex uint64
	ModifyIndex uint64
}

// DefaultNamespaceObject returns the namespace every cluster has.
func DefaultNamespaceObject() *Namespace {
	return &Namespace{Name: DefaultNamespace, Description: DefaultNamespaceDescription, Meta: map[string]string{}}
}

// Validate checks a namespace an operator asks to create or update,
// naming every problem at once.
func (n *Namespace) Validate() error {
	var p problems
	if !validNamespaceName.MatchString(n.Name) {
		p.add("invalid namespace name %q: use 1 to 128 letters, digits and dashes", n.Name)
	}
	if len(n.Description) > maxNamespaceDescription {
		p.add("namespace %q: description longer than %d characters", n.Name, maxNamespaceDescription)
	}
	if n.Quota != "" {
		p.add("namespace %q: quota %q: resource quotas are not supported", n.Name, n.Quota)
	}
	return p.err()
}

// Copy returns a deep copy, for changing a namespace read from the store.
func (n *Namespace) Copy() *Namespace {
	if n == nil {
		return nil
	}
	c := *n
	if n.Meta != nil {
		c.Meta = make(map[string]string, len(n.Meta))
		for k, v := range n.Meta {
			c.Meta[k] = v
		}
	}
	return &c
}

// NamespaceMissingError is the refusal of a request naming a namespace
// that does not exist. It is an invalid request (HTTP 400).
func NamespaceMissingError(name string) error {
	return fmt.Errorf("%w: namespace %q does not exist", ErrInvalidRequest, name)
}

// NamespaceListRequest lists namespaces, optionally by name prefix.
type NamespaceListRequest struct {
	QueryOptions
}

// NamespaceListResponse is the namespaces the caller may see.
type NamespaceListResponse struct {
	Namespaces []*Namespace
	QueryMeta
}

// NamespaceSpecificRequest reads one namespace by name.
type NamespaceSpecificRequest struct {
	Name string
	QueryOptions
}

// SingleNamespaceResponse is one namespace, or nil.
type SingleNamespaceResponse struct {
	Namespace *Namespace
	QueryMeta
}

// NamespaceUpsertRequest creates or updates namespaces.
type NamespaceUpsertRequest struct {
	Namespaces []*Namespace
	WriteRequest
}

// NamespaceDeleteRequest deletes namespaces by name.
type NamespaceDeleteRequest struct {
	Namespaces []string
	WriteRequest
}
