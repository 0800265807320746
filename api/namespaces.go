package api

import (
	"errors"
	"net/http"
	"sort"
)

// Namespace is a namespace in upstream's shape.
type Namespace struct {
	Name        string
	Description string
	Quota       string            `json:",omitempty"`
	Meta        map[string]string `json:",omitempty"`
	CreateIndex uint64
	ModifyIndex uint64
}

// Namespaces is the handle on /v1/namespace*.
type Namespaces struct {
	client *Client
}

// Namespaces returns the handle on namespaces.
func (c *Client) Namespaces() *Namespaces { return &Namespaces{client: c} }

// List lists the namespaces the caller may see, newest first as
// upstream's client sorts them.
func (n *Namespaces) List(q *QueryOptions) ([]*Namespace, *QueryMeta, error) {
	var out []*Namespace
	qm, err := n.client.query("/v1/namespaces", &out, q)
	if err != nil {
		return nil, nil, err
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreateIndex > out[j].CreateIndex })
	return out, qm, nil
}

// PrefixList lists the namespaces whose names start with prefix.
func (n *Namespaces) PrefixList(prefix string, q *QueryOptions) ([]*Namespace, *QueryMeta, error) {
	if q == nil {
		q = &QueryOptions{}
	}
	q.Prefix = prefix
	return n.List(q)
}

// Info reads one namespace.
func (n *Namespaces) Info(name string, q *QueryOptions) (*Namespace, *QueryMeta, error) {
	var out Namespace
	qm, err := n.client.query("/v1/namespace/"+pathID(name), &out, q)
	if err != nil {
		return nil, nil, err
	}
	return &out, qm, nil
}

// Register creates or updates a namespace.
func (n *Namespaces) Register(ns *Namespace, w *WriteOptions) (*WriteMeta, error) {
	if ns == nil || ns.Name == "" {
		return nil, errors.New("missing namespace name")
	}
	return n.client.write(http.MethodPut, "/v1/namespace", ns, nil, w)
}

// Delete deletes a namespace; it must hold no jobs that are not dead.
func (n *Namespaces) Delete(name string, w *WriteOptions) (*WriteMeta, error) {
	return n.client.write(http.MethodDelete, "/v1/namespace/"+pathID(name), nil, nil, w)
}
