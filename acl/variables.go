package acl

import (
	"strings"
)

// Variables capabilities (upstream's names): read decrypts a variable,
// list sees its metadata, write creates and updates it, destroy deletes
// it; deny wins over everything.
const (
	VariablesCapabilityRead    = "read"
	VariablesCapabilityList    = "list"
	VariablesCapabilityWrite   = "write"
	VariablesCapabilityDestroy = "destroy"
	VariablesCapabilityDeny    = "deny"
)

var variablesCapabilities = []string{
	VariablesCapabilityRead, VariablesCapabilityList, VariablesCapabilityWrite,
	VariablesCapabilityDestroy, VariablesCapabilityDeny,
}

// VariablesPolicy is the variables block of a namespace rule: capabilities
// on the variables whose paths match each path block.
type VariablesPolicy struct {
	Paths []*VariablesPathPolicy `hcl:"path,block"`
}

// VariablesPathPolicy grants capabilities on the variables at PathSpec
// (an exact path, or a glob with "*").
type VariablesPathPolicy struct {
	PathSpec     string   `hcl:"path,label"`
	Capabilities []string `hcl:"capabilities"`
}

// pathRules maps variable path patterns to the capabilities granted.
type pathRules map[string]capSet

// expandVariables is what a capability grants, as upstream: read and
// write each include list.
func expandVariables(caps []string) []string {
	var out []string
	for _, c := range caps {
		out = append(out, c)
		if c == VariablesCapabilityRead || c == VariablesCapabilityWrite {
			out = append(out, VariablesCapabilityList)
		}
	}
	return out
}

// namespaceVariableCaps is what a namespace's coarse policy grants on
// every path of its variables, as upstream: read reads and lists, write
// does everything.
func namespaceVariableCaps(policy string) []string {
	switch policy {
	case PolicyRead:
		return []string{VariablesCapabilityRead, VariablesCapabilityList}
	case PolicyWrite:
		return []string{VariablesCapabilityRead, VariablesCapabilityList, VariablesCapabilityWrite, VariablesCapabilityDestroy}
	case PolicyDeny:
		return []string{VariablesCapabilityDeny}
	}
	return nil
}

// addVariables merges one namespace rule's variable grants.
func (a *ACL) addVariables(ns *NamespacePolicy) {
	add := func(path string, caps []string) {
		if len(caps) == 0 {
			return
		}
		if a.vars == nil {
			a.vars = map[string]pathRules{}
		}
		rules := a.vars[ns.Name]
		if rules == nil {
			rules = pathRules{}
			a.vars[ns.Name] = rules
		}
		if rules[path] == nil {
			rules[path] = capSet{}
		}
		for _, c := range caps {
			rules[path][c] = true
		}
	}
	add("*", namespaceVariableCaps(ns.Policy))
	if ns.Variables != nil {
		for _, p := range ns.Variables.Paths {
			add(p.PathSpec, expandVariables(p.Capabilities))
		}
	}
}

// bestMatch returns the value whose key matches name best: the exact key,
// else the glob with the most literal characters, as namespace rules.
func bestMatch[V any](m map[string]V, name string) (V, bool) {
	if v, ok := m[name]; ok {
		return v, true
	}
	var best V
	found, bestLen := false, -1
	for pattern, v := range m {
		if !strings.Contains(pattern, "*") {
			continue
		}
		if n := len(strings.ReplaceAll(pattern, "*", "")); n > bestLen && globMatch(pattern, name) {
			best, bestLen, found = v, n, true
		}
	}
	return best, found
}

// AllowVariableOperation reports whether variables capability c is
// granted on path in namespace ns. The namespace rule that applies is
// chosen as for jobs; within it, the path rule that matches best, and a
// deny there wins.
func (a *ACL) AllowVariableOperation(ns, path, c string) bool {
	if a.IsManagement() {
		return true
	}
	rules, ok := bestMatch(a.vars, ns)
	if !ok {
		return false
	}
	caps, ok := bestMatch(rules, path)
	return ok && !caps[VariablesCapabilityDeny] && caps[c]
}
