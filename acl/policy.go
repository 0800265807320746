package acl

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/nomad-edge/nomad/helper/nesting"
)

// Coarse policies, as upstream spells them.
const (
	PolicyDeny  = "deny"
	PolicyRead  = "read"
	PolicyWrite = "write"
)

// Namespace capabilities we check (upstream's names).
const (
	NamespaceCapabilityDeny           = "deny"
	NamespaceCapabilityListJobs       = "list-jobs"
	NamespaceCapabilityParseJob       = "parse-job"
	NamespaceCapabilityReadJob        = "read-job"
	NamespaceCapabilitySubmitJob      = "submit-job"
	NamespaceCapabilityDispatchJob    = "dispatch-job"
	NamespaceCapabilityReadLogs       = "read-logs"
	NamespaceCapabilityReadFS         = "read-fs"
	NamespaceCapabilityAllocExec      = "alloc-exec"
	NamespaceCapabilityAllocLifecycle = "alloc-lifecycle"
	NamespaceCapabilityScaleJob       = "scale-job"
	NamespaceCapabilityReadJobScaling = "read-job-scaling"

	NamespaceCapabilityListScalingPolicies = "list-scaling-policies"
	NamespaceCapabilityReadScalingPolicy   = "read-scaling-policy"
)

var readCapabilities = []string{
	NamespaceCapabilityListJobs, NamespaceCapabilityParseJob,
	NamespaceCapabilityReadJob, NamespaceCapabilityReadJobScaling,
	NamespaceCapabilityListScalingPolicies, NamespaceCapabilityReadScalingPolicy,
}

var writeCapabilities = append(slices.Clone(readCapabilities),
	NamespaceCapabilitySubmitJob, NamespaceCapabilityDispatchJob,
	NamespaceCapabilityReadLogs, NamespaceCapabilityReadFS,
	NamespaceCapabilityAllocExec, NamespaceCapabilityAllocLifecycle,
	NamespaceCapabilityScaleJob)

// Policy is one parsed policy document.
type Policy struct {
	Namespaces []*NamespacePolicy `hcl:"namespace,block"`
	Node       *ScopePolicy       `hcl:"node,block"`
	Agent      *ScopePolicy       `hcl:"agent,block"`
	Operator   *ScopePolicy       `hcl:"operator,block"`
	NodePools  []*NodePoolPolicy  `hcl:"node_pool,block"`
}

// NodePoolPolicy grants read or write on the node pools Name matches (an
// exact name, or a glob with "*"). write includes delete, as upstream.
type NodePoolPolicy struct {
	Name   string `hcl:"name,label"`
	Policy string `hcl:"policy"`
}

// NamespacePolicy grants capabilities in the namespaces Name matches
// (an exact name, or a glob with "*").
type NamespacePolicy struct {
	Name         string           `hcl:"name,label"`
	Policy       string           `hcl:"policy,optional"`
	Capabilities []string         `hcl:"capabilities,optional"`
	Variables    *VariablesPolicy `hcl:"variables,block"`
}

// ScopePolicy is the read/write/deny policy of a cluster-wide scope.
type ScopePolicy struct {
	Policy string `hcl:"policy"`
}

// MaxNestingDepth bounds how deeply a policy document may nest.
const MaxNestingDepth = nesting.MaxDepth

// Parse parses the rules of a policy; name labels diagnostics. Unknown
// blocks and keys, unknown policies and capabilities are refused with
// one "name:line:column: message" line each.
func Parse(name, rules string) (*Policy, error) {
	src := []byte(rules)
	if d := nesting.CheckHCL(src, name, MaxNestingDepth); d != nil {
		return nil, &ParseError{Diagnostics: hcl.Diagnostics{d}}
	}
	file, diags := hclsyntax.ParseConfig(src, name, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, newParseError(diags)
	}
	p := &Policy{}
	if diags := gohcl.DecodeBody(file.Body, nil, p); diags.HasErrors() {
		return nil, newParseError(diags)
	}
	if diags := p.validate(file.Body.(*hclsyntax.Body)); diags.HasErrors() {
		return nil, newParseError(diags)
	}
	return p, nil
}

// validate checks the values gohcl decoded, reporting each at its block.
func (p *Policy) validate(body *hclsyntax.Body) hcl.Diagnostics {
	var diags hcl.Diagnostics
	at := func(typ string, i int) *hcl.Range {
		n := 0
		for _, b := range body.Blocks {
			if b.Type == typ {
				if n == i {
					r := b.DefRange()
					return &r
				}
				n++
			}
		}
		r := body.SrcRange
		return &r
	}
	bad := func(rng *hcl.Range, format string, args ...any) {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: fmt.Sprintf(format, args...), Subject: rng})
	}
	for i, ns := range p.Namespaces {
		if ns.Policy != "" && !validPolicy(ns.Policy) {
			bad(at("namespace", i), "namespace %q: invalid policy %q; use read, write or deny", ns.Name, ns.Policy)
		}
		for _, c := range ns.Capabilities {
			if c != NamespaceCapabilityDeny && !slices.Contains(writeCapabilities, c) {
				bad(at("namespace", i), "namespace %q: unknown capability %q", ns.Name, c)
			}
		}
	}
	for i, ns := range p.Namespaces {
		if ns.Variables == nil {
			continue
		}
		for _, vp := range ns.Variables.Paths {
			if vp.PathSpec == "" {
				bad(at("namespace", i), "namespace %q: variables path can't be empty", ns.Name)
			}
			for _, c := range vp.Capabilities {
				if !slices.Contains(variablesCapabilities, c) {
					bad(at("namespace", i), "namespace %q: variables path %q: unknown capability %q; use %s", ns.Name, vp.PathSpec, c, strings.Join(variablesCapabilities, ", "))
				}
			}
		}
	}
	for i, np := range p.NodePools {
		if !validPolicy(np.Policy) {
			bad(at("node_pool", i), "node_pool %q: invalid policy %q; use read, write or deny", np.Name, np.Policy)
		}
	}
	for typ, s := range map[string]*ScopePolicy{"node": p.Node, "agent": p.Agent, "operator": p.Operator} {
		if s != nil && !validPolicy(s.Policy) {
			bad(at(typ, 0), "%s: invalid policy %q; use read, write or deny", typ, s.Policy)
		}
	}
	return diags
}

func validPolicy(p string) bool {
	return p == PolicyDeny || p == PolicyRead || p == PolicyWrite
}

// ParseError is every problem found in a policy's rules.
type ParseError struct {
	Diagnostics hcl.Diagnostics
}

func newParseError(diags hcl.Diagnostics) *ParseError {
	errs := make(hcl.Diagnostics, 0, len(diags))
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			errs = append(errs, d)
		}
	}
	slices.SortStableFunc(errs, func(a, b *hcl.Diagnostic) int {
		if a.Subject == nil || b.Subject == nil {
			return 0
		}
		return cmp.Compare(a.Subject.Start.Byte, b.Subject.Start.Byte)
	})
	return &ParseError{Diagnostics: errs}
}

// Error renders one "file:line:column: message" line per problem.
func (e *ParseError) Error() string {
	lines := make([]string, 0, len(e.Diagnostics))
	for _, d := range e.Diagnostics {
		msg := d.Summary
		if d.Detail != "" {
			msg += "; " + d.Detail
		}
		if r := d.Subject; r != nil {
			msg = fmt.Sprintf("%s:%d:%d: %s", r.Filename, r.Start.Line, r.Start.Column, msg)
		}
		lines = append(lines, msg)
	}
	return strings.Join(lines, "\n")
}
