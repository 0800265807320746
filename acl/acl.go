package acl

import (
	"strings"
)

// ACL is what a token may do: the union of its policies, where a deny
// anywhere wins. A nil *ACL means ACLs are disabled and allows everything,
// so callers need not ask whether ACLs are on.
type ACL struct {
	management bool
	namespaces map[string]capSet
	// globs are namespace rules with "*": the one with the most literal
	// characters that matches applies, as upstream.
	globs    []globRule
	node     string
	agent    string
	operator string
	// pools maps node pool names or globs to the strongest policy granted;
	// deny wins over everything.
	pools map[string]string
	// vars maps namespace names or globs to their variable path rules.
	vars map[string]pathRules
}

type capSet map[string]bool

type globRule struct {
	pattern string
	caps    capSet
}

// ManagementACL may do anything.
var ManagementACL = &ACL{management: true}

// NewACL merges policies into one ACL.
func NewACL(policies []*Policy) *ACL {
	a := &ACL{namespaces: map[string]capSet{}}
	for _, p := range policies {
		for _, ns := range p.Namespaces {
			caps := a.namespaceCaps(ns.Name)
			for _, c := range expand(ns) {
				caps[c] = true
			}
			a.addVariables(ns)
		}
		a.node = merge(a.node, p.Node)
		a.agent = merge(a.agent, p.Agent)
		a.operator = merge(a.operator, p.Operator)
		for _, np := range p.NodePools {
			if a.pools == nil {
				a.pools = map[string]string{}
			}
			a.pools[np.Name] = merge(a.pools[np.Name], &ScopePolicy{Policy: np.Policy})
		}
	}
	return a
}

func (a *ACL) namespaceCaps(name string) capSet {
	if strings.Contains(name, "*") {
		for _, g := range a.globs {
			if g.pattern == name {
				return g.caps
			}
		}
		g := globRule{pattern: name, caps: capSet{}}
		a.globs = append(a.globs, g)
		return g.caps
	}
	if a.namespaces[name] == nil {
		a.namespaces[name] = capSet{}
	}
	return a.namespaces[name]
}

// expand turns a namespace rule's coarse policy and capabilities into
// capabilities; deny stands for itself and wins when checked.
func expand(ns *NamespacePolicy) []string {
	caps := append([]string(nil), ns.Capabilities...)
	switch ns.Policy {
	case PolicyDeny:
		caps = append(caps, NamespaceCapabilityDeny)
	case PolicyRead:
		caps = append(caps, readCapabilities...)
	case PolicyWrite:
		caps = append(caps, writeCapabilities...)
	}
	return caps
}

// merge folds a scope policy into the strongest seen so far: deny beats
// write beats read.
func merge(cur string, s *ScopePolicy) string {
	if s == nil {
		return cur
	}
	rank := map[string]int{"": 0, PolicyRead: 1, PolicyWrite: 2, PolicyDeny: 3}
	if rank[s.Policy] > rank[cur] {
		return s.Policy
	}
	return cur
}

// IsManagement reports whether the ACL may do anything.
func (a *ACL) IsManagement() bool { return a == nil || a.management }

// AllowNamespaceOperation reports whether capability cap is granted in
// namespace ns.
func (a *ACL) AllowNamespaceOperation(ns, cap string) bool {
	if a.IsManagement() {
		return true
	}
	caps := a.namespaces[ns]
	if caps == nil {
		caps = a.bestGlob(ns)
	}
	return caps != nil && !caps[NamespaceCapabilityDeny] && caps[cap]
}

func (a *ACL) bestGlob(ns string) capSet {
	var best capSet
	bestLen := -1
	for _, g := range a.globs {
		if n := len(strings.ReplaceAll(g.pattern, "*", "")); n > bestLen && globMatch(g.pattern, ns) {
			best, bestLen = g.caps, n
		}
	}
	return best
}

// globMatch matches s against a pattern where "*" is any run of characters.
func globMatch(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for i, p := range parts[1:] {
		if i == len(parts)-2 {
			return strings.HasSuffix(s, p)
		}
		j := strings.Index(s, p)
		if j < 0 {
			return false
		}
		s = s[j+len(p):]
	}
	return s == ""
}

func allow(policy string, write bool) bool {
	if write {
		return policy == PolicyWrite
	}
	return policy == PolicyRead || policy == PolicyWrite
}

// AllowNodeRead reports whether node information may be read.
func (a *ACL) AllowNodeRead() bool { return a.IsManagement() || allow(a.node, false) }

// AllowNodeWrite reports whether nodes may be changed.
func (a *ACL) AllowNodeWrite() bool { return a.IsManagement() || allow(a.node, true) }

// AllowAgentRead reports whether agent information may be read.
func (a *ACL) AllowAgentRead() bool { return a.IsManagement() || allow(a.agent, false) }

// AllowAgentWrite reports whether agents may be told to join or leave.
func (a *ACL) AllowAgentWrite() bool { return a.IsManagement() || allow(a.agent, true) }

// AllowOperatorRead reports whether cluster-level settings may be read.
func (a *ACL) AllowOperatorRead() bool { return a.IsManagement() || allow(a.operator, false) }

// AllowOperatorWrite reports whether cluster-level settings may be changed.
func (a *ACL) AllowOperatorWrite() bool { return a.IsManagement() || allow(a.operator, true) }

// AllowNamespace reports whether the ACL grants anything in namespace ns,
// which is what seeing the namespace itself needs (upstream's rule).
func (a *ACL) AllowNamespace(ns string) bool {
	if a.IsManagement() {
		return true
	}
	caps := a.namespaces[ns]
	if caps == nil {
		caps = a.bestGlob(ns)
	}
	if caps == nil || caps[NamespaceCapabilityDeny] {
		return false
	}
	return len(caps) > 0
}

// AllowNodePool reports whether node pool name may be read (write false)
// or created, changed and deleted (write true). An exact rule beats a
// glob; among globs the one with the most literal characters applies.
func (a *ACL) AllowNodePool(name string, write bool) bool {
	if a.IsManagement() {
		return true
	}
	policy, ok := a.pools[name]
	if !ok {
		bestLen := -1
		for pattern, p := range a.pools {
			if n := len(strings.ReplaceAll(pattern, "*", "")); strings.Contains(pattern, "*") && n > bestLen && globMatch(pattern, name) {
				policy, bestLen = p, n
			}
		}
	}
	return allow(policy, write)
}
